// Chooses the reduction-kernel table once per process (reduce_kernels.h): CPUID through
// __builtin_cpu_supports, overridable with BRAID_KERNELS so tests and benchmarks can force a
// path. A forced choice the CPU cannot run is an error, not a silent fallback: a benchmark
// labelled "avx512" must not quietly measure the scalar code.
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/error.h"
#include "braid/base/reduce_kernels.h"

namespace braid::kernels {

namespace {

[[noreturn]] void reject(std::string_view setting, const std::string& why) {
  throw InvalidArgument({.op = "reduce kernels"},
                        fmt::format("{}={}: {} (use auto, scalar, avx2 or avx512; this CPU supports up to {})",
                                    env::kKernels.name, setting, why, isa_name(best_isa())));
}

#if defined(__x86_64__) || defined(__i386__)
// F16C and FMA from CPUID leaf 1 (ECX): clang 14 refuses __builtin_cpu_supports("f16c"), and the
// AVX2 translation units (here and in compress/) are compiled with -mf16c and -mfma. Both use
// the YMM state whose OS support the "avx2" check already confirmed.
bool has_f16c_and_fma() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_F16C) != 0 && (ecx & bit_FMA) != 0;
}
#endif

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
#if defined(__x86_64__) || defined(__i386__)
    // __builtin_cpu_supports also checks (XGETBV) that the OS saves the wider registers.
    case Isa::kAvx2:
      __builtin_cpu_init();  // idempotent; needed if called before libgcc's own constructor ran
      return __builtin_cpu_supports("avx2") && has_f16c_and_fma();
    case Isa::kAvx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
    default: return false;  // only the scalar table is built
#endif
  }
  return false;
}

Isa best_isa() {
  if (cpu_supports(Isa::kAvx512)) return Isa::kAvx512;
  if (cpu_supports(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kScalar;
}

Isa resolve_isa(std::string_view setting) {
  if (setting == "auto") return best_isa();
  for (Isa isa : kAllIsas) {
    if (setting != isa_name(isa)) continue;
    if (!cpu_supports(isa)) reject(setting, fmt::format("this CPU cannot run the {} kernels", isa_name(isa)));
    return isa;
  }
  reject(setting, "unknown kernel set");
}

const KernelTable& kernels_for(Isa isa) {
  if (!cpu_supports(isa)) {
    throw InvalidArgument({.op = "reduce kernels"}, fmt::format("this CPU cannot run the {} kernels", isa_name(isa)));
  }
  switch (isa) {
    case Isa::kScalar: break;
#if defined(__x86_64__) || defined(__i386__)
    case Isa::kAvx2: return kAvx2Kernels;
    case Isa::kAvx512: return kAvx512Kernels;
#else
    default: break;
#endif
  }
  return kScalarKernels;
}

Isa active_isa() {
  // Resolved on first use; C++ guarantees one thread initialises it. If resolve_isa throws,
  // nothing is stored and the next call throws again, so a bad setting never goes unnoticed.
  static const Isa isa = resolve_isa(env::get_or_default(env::kKernels));
  return isa;
}

const KernelTable& active_kernels() {
  // The one process-wide table: immutable once chosen, read without locks by every rank thread.
  static const KernelTable& table = kernels_for(active_isa());
  return table;
}

}  // namespace braid::kernels
