// Reference values for the collective scenarios: small integers that every dtype represents
// exactly, so the expected result of any reduction order is exact and can be compared bit
// for bit (u8 wraps modulo 256, avg truncates for integers and divides in fp32 for 16-bit
// floats, like the kernels in base/reduce_op.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"

namespace braid::testing {

inline constexpr std::array kTestDTypes{DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                                        DType::kI32, DType::kI64, DType::kU8};
inline constexpr std::array kTestOps{ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd};

// allgather: n blocks of `count`, block b holding rank b's contribution.
void fill_gathered(std::vector<std::byte>& out, int n, std::int64_t count, DType dtype);
// broadcast: the root's `count` elements.
void fill_broadcast(std::vector<std::byte>& out, int root, std::int64_t count, DType dtype);
// reduce_scatter: rank `rank`'s input of `count` elements for `op`: elements [first, first +
// count) of its input sequence (a nonzero `first` shifts the pattern, so a stale buffer of an
// earlier call of the same size does not pass as this call's result).
void fill_reduce_inputs(std::vector<std::byte>& out, ReduceOp op, int rank, std::int64_t count, DType dtype,
                        std::int64_t first = 0);
// The reduction over n ranks of elements [first, first + count) of the inputs.
void fill_reduce_expected(std::vector<std::byte>& out, ReduceOp op, int n, std::int64_t first, std::int64_t count,
                          DType dtype);

}  // namespace braid::testing
