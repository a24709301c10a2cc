#include "braid/torch/tensor_dtype.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::torch {

DType braid_dtype(const ::torch::Tensor& tensor, const char* op) {
  switch (tensor.scalar_type()) {
    case ::torch::kFloat32: return DType::kF32;
    case ::torch::kFloat64: return DType::kF64;
    case ::torch::kFloat16: return DType::kF16;
    case ::torch::kBFloat16: return DType::kBF16;
    case ::torch::kInt32: return DType::kI32;
    case ::torch::kInt64: return DType::kI64;
    case ::torch::kUInt8: return DType::kU8;
    case ::torch::kBool: return DType::kU8;  // one byte per element: moved, never reduced
    default:
      throw InvalidArgument({.op = op}, fmt::format("torch dtype {} has no braid equivalent",
                                                    c10::toString(tensor.scalar_type())));
  }
}

}  // namespace braid::torch
