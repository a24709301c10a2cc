#include "braid/base/reduce_op.h"

#include "braid/base/error.h"
#include "braid/base/half.h"
#include "braid/base/reduce_kernels.h"

namespace braid {

namespace {

template <typename T>
void divide_typed(void* data, std::size_t count, int divisor) {
  T* d = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) d[i] = static_cast<T>(d[i] / static_cast<T>(divisor));
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void divide_16bit(void* data, std::size_t count, int divisor) {
  auto* d = static_cast<std::uint16_t*>(data);
  for (std::size_t i = 0; i < count; ++i) d[i] = FromFloat(ToFloat(d[i]) / static_cast<float>(divisor));
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
  }
  return "?";
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "avg") return ReduceOp::kAvg;
  if (name == "min") return ReduceOp::kMin;
  if (name == "max") return ReduceOp::kMax;
  if (name == "prod") return ReduceOp::kProd;
  return std::nullopt;
}

void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op) {
  if (static_cast<int>(dtype) >= kNumDTypes || static_cast<int>(op) >= kernels::kNumReduceOps) {
    throw InvalidArgument({.op = "reduce"}, "reduce_into: invalid dtype or op");
  }
  kernels::lookup(kernels::active_kernels(), dtype, op)(dst, src, count);
}

// Runs once per allreduce on the final buffer (not per hop), so it stays a scalar loop.
void divide_by(void* data, std::size_t count, DType dtype, int divisor) {
  switch (dtype) {
    case DType::kF32: divide_typed<float>(data, count, divisor); break;
    case DType::kF64: divide_typed<double>(data, count, divisor); break;
    case DType::kI32: divide_typed<std::int32_t>(data, count, divisor); break;
    case DType::kI64: divide_typed<std::int64_t>(data, count, divisor); break;
    case DType::kU8: divide_typed<std::uint8_t>(data, count, divisor); break;
    case DType::kF16: divide_16bit<half_to_float, float_to_half>(data, count, divisor); break;
    case DType::kBF16: divide_16bit<bf16_to_float, float_to_bf16>(data, count, divisor); break;
  }
}

}  // namespace braid
