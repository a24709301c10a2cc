// Internal to reduce_kernels_avx2.cc and reduce_kernels_avx512.cc: the one loop every SIMD
// kernel runs, written once over a "lane" type that each ISA file defines per dtype.
//
// A lane type L provides:
//   using Elem;                       the element type in memory
//   using Reg;                        what one step computes on (a register or a pair of them)
//   static constexpr size_t kWidth;   elements per step
//   static constexpr DType kDType;    for the scalar tail
//   static Reg load(const Elem*); static void store(Elem*, Reg);   unaligned, may widen/narrow
//   static Reg add(Reg, Reg), mul, min, max;                        Note [kernel identity]
//
// Why lane types live in an anonymous namespace of each ISA file: a template instantiated
// with an internal-linkage type has internal linkage itself, so no code compiled with -mavx2
// can be merged by the linker into a function that baseline code calls (the usual way
// per-file ISA flags cause SIGILL on older CPUs). For the same reason these files call no
// inline function that has external linkage except the always-inline intrinsics.
#pragma once

#include <cstddef>

#include "braid/base/reduce_kernels.h"

namespace braid::kernels::simd {

struct SumOp {
  static constexpr ReduceOp kOp = ReduceOp::kSum;
  template <class L>
  static typename L::Reg apply(typename L::Reg a, typename L::Reg b) { return L::add(a, b); }
};
struct MinOp {
  static constexpr ReduceOp kOp = ReduceOp::kMin;
  template <class L>
  static typename L::Reg apply(typename L::Reg a, typename L::Reg b) { return L::min(a, b); }
};
struct MaxOp {
  static constexpr ReduceOp kOp = ReduceOp::kMax;
  template <class L>
  static typename L::Reg apply(typename L::Reg a, typename L::Reg b) { return L::max(a, b); }
};
struct ProdOp {
  static constexpr ReduceOp kOp = ReduceOp::kProd;
  template <class L>
  static typename L::Reg apply(typename L::Reg a, typename L::Reg b) { return L::mul(a, b); }
};

// Full steps with SIMD, then the remainder (< kWidth elements) with the scalar kernel, which
// is by definition bit-identical. Two steps per iteration keep two loads in flight per stream.
template <class L, class Op>
void reduce_loop(void* dst, const void* src, std::size_t count) {
  using Elem = typename L::Elem;
  Elem* d = static_cast<Elem*>(dst);
  const Elem* s = static_cast<const Elem*>(src);
  std::size_t i = 0;
  for (; i + 2 * L::kWidth <= count; i += 2 * L::kWidth) {
    typename L::Reg r0 = Op::template apply<L>(L::load(d + i), L::load(s + i));
    typename L::Reg r1 = Op::template apply<L>(L::load(d + i + L::kWidth), L::load(s + i + L::kWidth));
    L::store(d + i, r0);
    L::store(d + i + L::kWidth, r1);
  }
  for (; i + L::kWidth <= count; i += L::kWidth) L::store(d + i, Op::template apply<L>(L::load(d + i), L::load(s + i)));
  if (i < count) {
    kScalarKernels.reduce[static_cast<int>(L::kDType)][static_cast<int>(Op::kOp)](d + i, s + i, count - i);
  }
}

// Fills the row of L::kDType (kAvg shares kSum's kernel).
template <class L>
constexpr void fill_row(KernelTable& table) {
  ReduceFn* row = table.reduce[static_cast<int>(L::kDType)];
  row[static_cast<int>(ReduceOp::kSum)] = &reduce_loop<L, SumOp>;
  row[static_cast<int>(ReduceOp::kAvg)] = &reduce_loop<L, SumOp>;
  row[static_cast<int>(ReduceOp::kMin)] = &reduce_loop<L, MinOp>;
  row[static_cast<int>(ReduceOp::kMax)] = &reduce_loop<L, MaxOp>;
  row[static_cast<int>(ReduceOp::kProd)] = &reduce_loop<L, ProdOp>;
}

}  // namespace braid::kernels::simd
