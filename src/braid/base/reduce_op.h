// Reduction operators and the element-wise kernel behind every reducing collective.
// reduce_into runs a SIMD kernel (AVX2+F16C or AVX-512) chosen once per process from CPUID,
// or the portable scalar loop; every path gives bit-identical results (reduce_kernels.h,
// docs/kernels.md). 16-bit floats are widened to fp32 per element and narrowed once. avg is a sum whose result the collective divides once,
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

// dst[i] = dst[i] (op) src[i] for i < count. kAvg accumulates like kSum. Integers wrap;
// min/max follow std::min/std::max (a NaN already in dst is kept, one in src is ignored).
// REQUIRES: dst and src aligned to the element size; identical or non-overlapping ranges.
// Throws braid::InvalidArgument on first use if BRAID_KERNELS names kernels this CPU lacks.
void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op);

// data[i] /= divisor, for the final step of kAvg (integers divide with truncation).
void divide_by(void* data, std::size_t count, DType dtype, int divisor);

}  // namespace braid
