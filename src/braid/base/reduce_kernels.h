// Internal: the per-ISA tables of reduction kernels behind braid::reduce_into, and the choice
// of one of them at run time. Only reduce_op.cc, the kernel files, their tests and the kernel
// benchmark include this header; everything else calls reduce_into().
//
// Dispatch. Each ISA (scalar, AVX2+F16C, AVX-512F/BW) fills one constant KernelTable in its own
// translation unit, compiled with that ISA's flags (src/braid/base/CMakeLists.txt), so the rest
// of the library is built for the baseline x86-64 and runs on a CPU without AVX2. The tables
// are plain data: nothing in a SIMD translation unit runs until the dispatcher has checked
// CPUID (__builtin_cpu_supports, which also checks that the OS saves the wider registers).
// The choice is made once per process (BRAID_KERNELS, default "auto" = the widest the CPU
// supports) and cached in a function-local static: the one process-wide immutable table.
//
// Bitwise identity (Note [kernel identity]). Every table produces exactly the bytes the scalar
// table does, for every input, because ranks on different hosts may run different tables and
// DESIGN.md requires all ranks to hold identical results. The definitions all paths follow:
//   - integers wrap (two's complement) on sum and prod; min/max are exact.
//   - f32/f64 sum and prod are one IEEE operation in round-to-nearest-even; if dst's element is
//     a NaN the result is that NaN quieted, else a NaN from src is returned quieted (x86's rule
//     with dst as the first operand, written out because a compiler may swap the operands of a
//     commutative add, which would make the payload of NaN + NaN depend on code generation).
//   - min(a, b) is std::min: a unless b < a; max(a, b) is std::max: a unless a < b. So a NaN
//     in dst is kept, a NaN in src is ignored, and min(+0, -0) keeps dst's zero.
//   - f16 and bf16 widen exactly to f32, combine as above, and narrow once with round-to-
//     nearest-even (half.h: float_to_half / float_to_bf16, NaN quieted, Inf kept).
// Results assume the default MXCSR (no flush-to-zero / denormals-are-zero), as all of braid does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"

namespace braid::kernels {

// dst[i] = dst[i] (op) src[i] for i < count.
// REQUIRES: dst and src aligned to the element size (no other alignment), count may be 0;
// the ranges either do not overlap or are identical.
using ReduceFn = void (*)(void* dst, const void* src, std::size_t count);

inline constexpr int kNumReduceOps = 5;  // ReduceOp values 0..4; kAvg's entry is kSum's kernel

// Indexed by [DType][ReduceOp], both as their underlying integers.
struct KernelTable {
  ReduceFn reduce[kNumDTypes][kNumReduceOps];
};

enum class Isa : std::uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
inline constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};

// One table per ISA, each defined in reduce_kernels_<isa>.cc. On non-x86 builds only the
// scalar table exists; cpu_supports() is false for the others.
extern const KernelTable kScalarKernels;
extern const KernelTable kAvx2Kernels;
extern const KernelTable kAvx512Kernels;

std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512"

// Whether this CPU (and OS) can run the table: avx2 needs AVX2, F16C and FMA, avx512 needs
// AVX512F and AVX512BW.
bool cpu_supports(Isa isa);

// The widest ISA cpu_supports().
Isa best_isa();

// Resolves a BRAID_KERNELS value: "auto" gives best_isa(); an ISA name gives that ISA if the
// CPU supports it. An unknown name, or an ISA this CPU lacks, throws braid::InvalidArgument.
Isa resolve_isa(std::string_view setting);

// The table of `isa`. Throws braid::InvalidArgument if !cpu_supports(isa).
const KernelTable& kernels_for(Isa isa);

// The ISA chosen for this process: resolve_isa(BRAID_KERNELS), evaluated on first use and
// cached. If the setting is invalid every call throws (nothing is cached).
Isa active_isa();
const KernelTable& active_kernels();

inline ReduceFn lookup(const KernelTable& table, DType dtype, ReduceOp op) {
  return table.reduce[static_cast<int>(dtype)][static_cast<int>(op)];
}

}  // namespace braid::kernels
