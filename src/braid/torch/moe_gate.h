// The MoE router (Switch Transformer, GShard): a linear map from a token to one logit per
// expert, a softmax, and the top-k experts with their gate weights.
//
//   top-1 (Switch): the weight of the chosen expert is its softmax probability;
//   top-2 (GShard): the two probabilities renormalised to sum to 1.
//
// and the two auxiliary losses the router is trained with, over this rank's tokens:
//   load balancing (Switch, eq. 4): E x sum_e f_e x P_e, f_e the fraction of tokens whose first
//     choice is e, P_e the mean router probability of e; 1 when the gate is perfectly balanced;
//   router z-loss (ST-MoE, eq. 5): mean over tokens of logsumexp(logits)^2, which keeps the
//     logits small (round-off in the softmax).
// f_e is a count, so the balancing loss reaches the router only through P_e (as in Switch).
#pragma once

#include <torch/torch.h>

#include "braid/torch/tensor_parallel_layers.h"  // BRAID_TORCH_MODULE

#include <cstdint>
#include <vector>

namespace braid::torch {

struct MoeGateOutput {
  ::torch::Tensor logits;   // [T, E]
  ::torch::Tensor probs;    // [T, E], softmax of logits
  ::torch::Tensor gates;    // [T, k], the chosen experts' weights (differentiable)
  std::vector<std::int32_t> expert_ids;  // T x k, row-major, choice 0 first (MoeDispatcher::plan's input)
  ::torch::Tensor aux_loss;  // scalar: load balancing
  ::torch::Tensor z_loss;    // scalar: router z-loss
};

class TopKGateImpl : public ::torch::nn::Module {
 public:
  // InvalidArgument when top_k is outside [1, experts] or hidden / experts < 1.
  TopKGateImpl(std::int64_t hidden, int experts, int top_k);
  // x: [T, hidden] -> the choices and losses above (T may be 0: zero losses).
  MoeGateOutput forward(const ::torch::Tensor& x);

  int experts() const { return experts_; }
  int top_k() const { return top_k_; }

  ::torch::nn::Linear router{nullptr};  // hidden -> experts, no bias

 private:
  int experts_;
  int top_k_;
};
BRAID_TORCH_MODULE(TopKGate);

// The losses above, on their own (tested against hand-computed values).
::torch::Tensor load_balancing_loss(const ::torch::Tensor& probs, const std::vector<std::int32_t>& expert_ids,
                                    int top_k);
::torch::Tensor router_z_loss(const ::torch::Tensor& logits);

}  // namespace braid::torch
