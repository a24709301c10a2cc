#include "braid/torch/gradient_clipping.h"

#include <cmath>
#include <set>

#include "braid/collectives/collectives.h"
#include "braid/torch/tensor_parallel_layers.h"

namespace braid::torch {
namespace {

double squared_norm(const std::vector<::torch::Tensor>& params) {
  double sum = 0;
  for (const ::torch::Tensor& p : params) {
    if (p.grad().defined()) sum += p.grad().to(::torch::kFloat64).pow(2).sum().item<double>();
  }
  return sum;
}

}  // namespace

ParameterSplit split_by_tensor_parallelism(::torch::nn::Module& module) {
  std::set<const void*> split;
  for (const std::shared_ptr<::torch::nn::Module>& m : module.modules()) {
    if (auto* tp = dynamic_cast<TensorParallelModule*>(m.get())) {
      for (const ::torch::Tensor& p : tp->split_parameters()) split.insert(p.unsafeGetTensorImpl());
    }
  }
  ParameterSplit out;
  for (const ::torch::Tensor& p : module.parameters()) {
    (split.count(p.unsafeGetTensorImpl()) ? out.split : out.replicated).push_back(p);
  }
  return out;
}

double global_gradient_norm(const ParameterSplit& params, int tp_rank, Communicator& model_parallel) {
  double sum = squared_norm(params.split) + (tp_rank == 0 ? squared_norm(params.replicated) : 0.0);
  allreduce(model_parallel, &sum, &sum, 1, DType::kF64, ReduceOp::kSum);
  return std::sqrt(sum);
}

double clip_gradients_by_global_norm(const ParameterSplit& params, double max_norm, int tp_rank,
                                     Communicator& model_parallel) {
  double norm = global_gradient_norm(params, tp_rank, model_parallel);
  double scale = max_norm / (norm + 1e-6);
  if (!std::isfinite(norm) || scale >= 1) return norm;
  ::torch::NoGradGuard no_grad;
  for (const auto* list : {&params.split, &params.replicated}) {
    for (const ::torch::Tensor& p : *list) {
      if (p.grad().defined()) p.grad().mul_(scale);
    }
  }
  return norm;
}

void sync_sequence_parallel_gradients(const std::vector<::torch::Tensor>& replicated, Communicator& tp) {
  if (tp.size() == 1) return;
  std::vector<::torch::Tensor> grads;
  for (const ::torch::Tensor& p : replicated) {
    if (p.grad().defined()) grads.push_back(p.grad().to(::torch::kFloat32).reshape({-1}));
  }
  if (grads.empty()) return;
  ::torch::Tensor flat = ::torch::cat(grads).contiguous();
  allreduce(tp, flat.data_ptr(), flat.data_ptr(), flat.numel(), DType::kF32, ReduceOp::kSum);
  ::torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const ::torch::Tensor& p : replicated) {
    if (!p.grad().defined()) continue;
    p.mutable_grad().copy_(flat.narrow(0, offset, p.numel()).view_as(p.grad()));
    offset += p.numel();
  }
}

}  // namespace braid::torch
