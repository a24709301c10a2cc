// Reduction operators and the element-wise kernel behind every reducing collective.
// Portable scalar loops the compiler vectorises at -O2/-O3; 16-bit floats are widened to
// fp32 per element and narrowed once. avg is a sum whose result the collective divides once,
// at the end (never per hop), so every algorithm rounds the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "braid/base/dtype.h"

namespace braid {

enum class ReduceOp : std::uint8_t { kSum = 0, kAvg = 1, kMin = 2, kMax = 3, kProd = 4 };

std::string_view reduce_op_name(ReduceOp op);
std::optional<ReduceOp> parse_reduce_op(std::string_view name);

// dst[i] = dst[i] (op) src[i] for i < count. kAvg accumulates like kSum.
void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op);

// data[i] /= divisor, for the final step of kAvg (integers divide with truncation).
void divide_by(void* data, std::size_t count, DType dtype, int divisor);

}  // namespace braid
