#include "braid/python/tensor_mapping.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace braid::python {

namespace {

std::string scalar_name(at::ScalarType type) { return c10::toString(type); }

}  // namespace

DType reduction_dtype(at::ScalarType type, const ErrorContext& ctx) {
  switch (type) {
    case at::kFloat: return DType::kF32;
    case at::kDouble: return DType::kF64;
    case at::kHalf: return DType::kF16;
    case at::kBFloat16: return DType::kBF16;
    case at::kInt: return DType::kI32;
    case at::kLong: return DType::kI64;
    case at::kByte: return DType::kU8;
    default:
      throw InvalidArgument(ctx, fmt::format("braid cannot reduce tensors of dtype {} (it reduces float32, float64, "
                                             "float16, bfloat16, int32, int64 and uint8)",
                                             scalar_name(type)));
  }
}

ReduceOp reduction_op(const c10d::ReduceOp& op, const ErrorContext& ctx) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return ReduceOp::kSum;
    case c10d::ReduceOp::AVG: return ReduceOp::kAvg;
    case c10d::ReduceOp::PRODUCT: return ReduceOp::kProd;
    case c10d::ReduceOp::MIN: return ReduceOp::kMin;
    case c10d::ReduceOp::MAX: return ReduceOp::kMax;
    case c10d::ReduceOp::BAND: case c10d::ReduceOp::BOR: case c10d::ReduceOp::BXOR:
      throw InvalidArgument(ctx, "braid does not support the bitwise reduce ops (BAND, BOR, BXOR); it reduces with "
                                 "SUM, AVG, PRODUCT, MIN and MAX");
    default:
      throw InvalidArgument(ctx, fmt::format("braid does not support reduce op {} (it reduces with SUM, AVG, "
                                             "PRODUCT, MIN and MAX)",
                                             static_cast<int>(op.op_)));
  }
}

Buffer reduction_buffer(const at::Tensor& tensor, const ErrorContext& ctx) {
  return {.data = tensor.data_ptr(), .count = tensor.numel(), .dtype = reduction_dtype(tensor.scalar_type(), ctx)};
}

Buffer byte_buffer(const at::Tensor& tensor) {
  const DType tag = [&] {
    try {
      return reduction_dtype(tensor.scalar_type(), {});
    } catch (const InvalidArgument&) {
      return DType::kU8;
    }
  }();
  const std::int64_t count = tag == DType::kU8 ? tensor.numel() * static_cast<std::int64_t>(tensor.element_size())
                                               : tensor.numel();
  return {.data = tensor.data_ptr(), .count = count, .dtype = tag};
}

void check_dense_cpu(const at::Tensor& tensor, const ErrorContext& ctx) {
  if (!tensor.defined()) throw InvalidArgument(ctx, "undefined tensor");
  if (!tensor.device().is_cpu()) {
    throw InvalidArgument(ctx, fmt::format("braid takes CPU tensors; this one is on {}", tensor.device().str()));
  }
  if (tensor.layout() != at::kStrided) throw InvalidArgument(ctx, "braid takes dense (strided) tensors, not sparse ones");
}

void check_same_layout(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const ErrorContext& ctx) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    check_dense_cpu(tensors[i], ctx);
    if (tensors[i].scalar_type() != like.scalar_type() || tensors[i].sizes() != like.sizes()) {
      throw InvalidArgument(ctx, fmt::format("tensor {} is {} {}, expected {} {} like the input", i,
                                             scalar_name(tensors[i].scalar_type()), fmt::join(tensors[i].sizes(), "x"),
                                             scalar_name(like.scalar_type()), fmt::join(like.sizes(), "x")));
    }
  }
}

void check_count(std::size_t got, std::size_t expected, const char* what, const ErrorContext& ctx) {
  if (got != expected) throw InvalidArgument(ctx, fmt::format("{} holds {} tensors, expected {}", what, got, expected));
}

void check_same_dtype(const std::vector<at::Tensor>& tensors, const ErrorContext& ctx) {
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].scalar_type() != tensors[0].scalar_type()) {
      throw InvalidArgument(ctx, fmt::format("tensor {} is {} but tensor 0 is {}: the list must share one dtype", i,
                                             scalar_name(tensors[i].scalar_type()),
                                             scalar_name(tensors[0].scalar_type())));
    }
  }
}

void check_whole_multiple(const at::Tensor& big, const at::Tensor& small, int n, const ErrorContext& ctx) {
  if (big.scalar_type() != small.scalar_type()) {
    throw InvalidArgument(ctx, fmt::format("the buffers differ in dtype: {} and {}", scalar_name(big.scalar_type()),
                                           scalar_name(small.scalar_type())));
  }
  if (big.numel() != small.numel() * n) {
    throw InvalidArgument(ctx, fmt::format("the flat buffer holds {} elements, expected {} x {} = {}", big.numel(), n,
                                           small.numel(), small.numel() * n));
  }
}

}  // namespace braid::python
