// What a training rank holds for its model, in bytes: parameters, gradients and optimizer
// state (ZeRO's "model states", the memory stages 1-3 shard). braid-train reports it per rank
// so that DDP and ZeRO runs can be compared side by side (docs/zero.md).
//
// Counted: numel x element size of each defined tensor. The optimizer state is read through
// LibTorch's per-parameter state objects of SGD (momentum buffer), Adam and AdamW (first and
// second moments, the AMSGrad maximum); another optimizer's state counts 0 (its state type is
// opaque to a generic caller). The state is created lazily at the first step, so measure after
// one.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace braid::torch {

struct ModelStateBytes {
  std::int64_t parameters = 0;
  std::int64_t gradients = 0;
  std::int64_t master = 0;           // an fp32 master copy (0 for ZeroOptimizer: fp32 needs none)
  std::int64_t optimizer_state = 0;
  std::int64_t total() const { return parameters + gradients + master + optimizer_state; }
};

std::int64_t tensor_bytes(const ::torch::Tensor& tensor);  // 0 for an undefined tensor
std::int64_t optimizer_state_bytes(::torch::optim::Optimizer& optimizer);
// Each parameter and its gradient, plus the optimizer's state (null: none).
ModelStateBytes model_state_bytes(const std::vector<::torch::Tensor>& params, ::torch::optim::Optimizer* optimizer);

}  // namespace braid::torch
