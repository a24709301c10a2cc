#include "braid/base/reduce_op.h"

#include <algorithm>

#include "braid/base/half.h"

namespace braid {

namespace {

template <typename T, typename F>
void apply(void* dst, const void* src, std::size_t count, F combine) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < count; ++i) d[i] = combine(d[i], s[i]);
}

template <typename T>
void reduce_typed(void* dst, const void* src, std::size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: apply<T>(dst, src, count, [](T a, T b) { return static_cast<T>(a + b); }); break;
    case ReduceOp::kMin: apply<T>(dst, src, count, [](T a, T b) { return std::min(a, b); }); break;
    case ReduceOp::kMax: apply<T>(dst, src, count, [](T a, T b) { return std::max(a, b); }); break;
    case ReduceOp::kProd: apply<T>(dst, src, count, [](T a, T b) { return static_cast<T>(a * b); }); break;
  }
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void reduce_16bit(void* dst, const void* src, std::size_t count, ReduceOp op) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* s = static_cast<const std::uint16_t*>(src);
  for (std::size_t i = 0; i < count; ++i) {
    float a = ToFloat(d[i]);
    float b = ToFloat(s[i]);
    float r = 0;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: r = a + b; break;
      case ReduceOp::kMin: r = std::min(a, b); break;
      case ReduceOp::kMax: r = std::max(a, b); break;
      case ReduceOp::kProd: r = a * b; break;
    }
    d[i] = FromFloat(r);
  }
}

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
  switch (dtype) {
    case DType::kF32: reduce_typed<float>(dst, src, count, op); break;
    case DType::kF64: reduce_typed<double>(dst, src, count, op); break;
    case DType::kI32: reduce_typed<std::int32_t>(dst, src, count, op); break;
    case DType::kI64: reduce_typed<std::int64_t>(dst, src, count, op); break;
    case DType::kU8: reduce_typed<std::uint8_t>(dst, src, count, op); break;
    case DType::kF16: reduce_16bit<half_to_float, float_to_half>(dst, src, count, op); break;
    case DType::kBF16: reduce_16bit<bf16_to_float, float_to_bf16>(dst, src, count, op); break;
  }
}

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
