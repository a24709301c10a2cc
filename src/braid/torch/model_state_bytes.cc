#include "braid/torch/model_state_bytes.h"

namespace braid::torch {

std::int64_t tensor_bytes(const ::torch::Tensor& tensor) {
  if (!tensor.defined()) return 0;
  return tensor.numel() * static_cast<std::int64_t>(tensor.element_size());
}

std::int64_t optimizer_state_bytes(::torch::optim::Optimizer& optimizer) {
  std::int64_t total = 0;
  for (const auto& [key, state] : optimizer.state()) {
    if (const auto* sgd = dynamic_cast<const ::torch::optim::SGDParamState*>(state.get())) {
      total += tensor_bytes(sgd->momentum_buffer());
    } else if (const auto* adam = dynamic_cast<const ::torch::optim::AdamParamState*>(state.get())) {
      total += tensor_bytes(adam->exp_avg()) + tensor_bytes(adam->exp_avg_sq()) + tensor_bytes(adam->max_exp_avg_sq());
    } else if (const auto* adamw = dynamic_cast<const ::torch::optim::AdamWParamState*>(state.get())) {
      total += tensor_bytes(adamw->exp_avg()) + tensor_bytes(adamw->exp_avg_sq()) +
               tensor_bytes(adamw->max_exp_avg_sq());
    }
  }
  return total;
}

std::int64_t model_state_bytes(const std::vector<::torch::Tensor>& params, ::torch::optim::Optimizer* optimizer) {
  std::int64_t total = optimizer ? optimizer_state_bytes(*optimizer) : 0;
  for (const ::torch::Tensor& p : params) total += tensor_bytes(p) + tensor_bytes(p.grad());
  return total;
}

}  // namespace braid::torch
