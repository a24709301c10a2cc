#include "braid/torch/model_state_bytes.h"

namespace braid::torch {

std::int64_t tensor_bytes(const ::torch::Tensor& tensor) {
  if (!tensor.defined()) return 0;
  return tensor.numel() * static_cast<std::int64_t>(tensor.element_size());
}

std::int64_t optimizer_state_bytes(::torch::optim::Optimizer& optimizer) {
  std::int64_t total = 0;
  // Looked up per parameter, with the key LibTorch's optimizers use (the TensorImpl's address).
  for (const ::torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    for (const ::torch::Tensor& p : group.params()) {
    auto found = optimizer.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (found == optimizer.state().end()) continue;
    const ::torch::optim::OptimizerParamState* state = found->second.get();
    if (const auto* sgd = dynamic_cast<const ::torch::optim::SGDParamState*>(state)) {
      total += tensor_bytes(sgd->momentum_buffer());
    } else if (const auto* adam = dynamic_cast<const ::torch::optim::AdamParamState*>(state)) {
      total += tensor_bytes(adam->exp_avg()) + tensor_bytes(adam->exp_avg_sq()) + tensor_bytes(adam->max_exp_avg_sq());
    } else if (const auto* adamw = dynamic_cast<const ::torch::optim::AdamWParamState*>(state)) {
      total += tensor_bytes(adamw->exp_avg()) + tensor_bytes(adamw->exp_avg_sq()) +
               tensor_bytes(adamw->max_exp_avg_sq());
    }
    }
  }
  return total;
}

ModelStateBytes model_state_bytes(const std::vector<::torch::Tensor>& params, ::torch::optim::Optimizer* optimizer) {
  ModelStateBytes bytes{.optimizer_state = optimizer ? optimizer_state_bytes(*optimizer) : 0};
  for (const ::torch::Tensor& p : params) {
    bytes.parameters += tensor_bytes(p);
    bytes.gradients += tensor_bytes(p.grad());
  }
  return bytes;
}

}  // namespace braid::torch
