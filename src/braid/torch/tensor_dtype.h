// The braid dtype of a torch tensor's elements (torch's scalar types that braid can move).
#pragma once

#include <torch/torch.h>

#include "braid/base/dtype.h"

namespace braid::torch {

// Throws InvalidArgument naming `op` for a scalar type braid has no dtype for.
DType braid_dtype(const ::torch::Tensor& tensor, const char* op);

}  // namespace braid::torch
