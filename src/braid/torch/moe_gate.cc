#include "braid/torch/moe_gate.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::torch {

using ::torch::Tensor;

TopKGateImpl::TopKGateImpl(std::int64_t hidden, int experts, int top_k) : experts_(experts), top_k_(top_k) {
  if (hidden < 1 || experts < 1 || top_k < 1 || top_k > experts) {
    throw InvalidArgument({.op = "moe gate"}, fmt::format("hidden {} and experts {} must be >= 1 and top-k {} in [1, "
                                                          "experts]",
                                                          hidden, experts, top_k));
  }
  router = register_module("router", ::torch::nn::Linear(::torch::nn::LinearOptions(hidden, experts).bias(false)));
}

MoeGateOutput TopKGateImpl::forward(const Tensor& x) {
  MoeGateOutput out;
  out.logits = router->forward(x);
  out.probs = ::torch::softmax(out.logits, -1);
  auto [values, indices] = out.probs.topk(top_k_, -1, /*largest=*/true, /*sorted=*/true);
  // Switch keeps the top-1 probability as is; GShard renormalises the top-2 so the token's
  // output is a convex combination of its experts.
  out.gates = top_k_ == 1 ? values : values / values.sum(-1, /*keepdim=*/true);
  Tensor ids = indices.to(::torch::kInt32).contiguous();
  out.expert_ids.assign(ids.data_ptr<std::int32_t>(), ids.data_ptr<std::int32_t>() + ids.numel());
  out.aux_loss = load_balancing_loss(out.probs, out.expert_ids, top_k_);
  out.z_loss = router_z_loss(out.logits);
  return out;
}

Tensor load_balancing_loss(const Tensor& probs, const std::vector<std::int32_t>& expert_ids, int top_k) {
  std::int64_t tokens = probs.size(0), experts = probs.size(1);
  if (tokens == 0) return ::torch::zeros({}, probs.options());
  std::vector<float> first_choices(static_cast<std::size_t>(experts), 0.0F);
  for (std::int64_t t = 0; t < tokens; ++t) first_choices[static_cast<std::size_t>(expert_ids[t * top_k])] += 1.0F;
  Tensor fraction = ::torch::tensor(first_choices, probs.options()) / static_cast<double>(tokens);
  Tensor mean_prob = probs.mean(0);
  return static_cast<double>(experts) * (fraction * mean_prob).sum();
}

Tensor router_z_loss(const Tensor& logits) {
  if (logits.size(0) == 0) return ::torch::zeros({}, logits.options());
  return ::torch::logsumexp(logits, -1).square().mean();
}

}  // namespace braid::torch
