// Dispatch and combine as autograd functions over parallel::MoeDispatcher (the EP group's
// all-to-all). Each backward is the reverse exchange of its forward, with the same plan:
//
//   moe_dispatch(x)                 forward: dispatch(plan, x)       -> expert rows [R, H]
//                                   backward: undispatch(grad)       -> a token's copies summed
//   moe_combine(y, gates)           forward: return_rows(plan, y)    -> one row per choice, then
//                                            out[t] = sum_j gates[t, j] y(t, j) locally
//                                   backward: dispatch_choices(gates[t, j] grad_out[t]) -> d y;
//                                            d gates[t, j] = <grad_out[t], y(t, j)> from the
//                                            rows kept in the forward (no exchange)
//
// so a layer's backward moves exactly the bytes of its forward, the other way, as braid-plan's
// MoE formula counts (docs/moe.md). The combine keeps the returned rows (T k x H) for the
// gates' gradient rather than exchanging them a second time in backward. Dropped choices come
// back as zero rows: they add nothing to the token and get zero gradient.
//
// Every rank of the EP group must call these, and run the backward, in the same order (the
// collectives' ordering contract). f32 and f64 rows (the dispatcher's dtype).
// REQUIRES: the dispatcher outlives the graph; x, y contiguous-able [rows, hidden].
#pragma once

#include <torch/torch.h>

#include <memory>

#include "braid/parallel/moe_dispatcher.h"

namespace braid::torch {

// Seconds spent in this layer's exchanges (forward and backward), for the run report.
struct MoeExchangeClock {
  double seconds = 0;
};

// What one layer call's exchanges share: the dispatcher, this call's plan, the clock.
struct MoeExchangeContext {
  parallel::MoeDispatcher* dispatcher = nullptr;
  std::shared_ptr<const parallel::MoeDispatchPlan> plan;
  MoeExchangeClock* clock = nullptr;  // may be null
};

// x: [plan.routing.tokens, H] -> [plan.expert_rows(), H] in the expert buffer's order.
::torch::Tensor moe_dispatch(const ::torch::Tensor& x, const MoeExchangeContext& context);
// expert_output: [plan.expert_rows(), H], gates: [T, k] -> [T, H].
::torch::Tensor moe_combine(const ::torch::Tensor& expert_output, const ::torch::Tensor& gates,
                            const MoeExchangeContext& context);
// per_choice: [T, k, H], gates: [T, k] -> sum_j gates[t, j] per_choice[t, j] (j in order, from
// the first choice: the dispatcher's combine order), no exchange. moe_combine's forward and the
// pipelined path's (moe_pipelined.h) share it so that both compute the same bits.
::torch::Tensor moe_gate_weighted_sum(const ::torch::Tensor& per_choice, const ::torch::Tensor& gates);

// The weighted sum's gradients for grad_out [T, H]: gates [T, k] (grad_out . per_choice) and the
// choices' rows [T, k, H] (gates x grad_out, contiguous: the exchange reads it as a buffer).
struct MoeWeightedSumGrads {
  ::torch::Tensor gates;
  ::torch::Tensor per_choice;
};
MoeWeightedSumGrads moe_gate_weighted_sum_backward(const ::torch::Tensor& per_choice, const ::torch::Tensor& gates,
                                                   const ::torch::Tensor& grad_out);

}  // namespace braid::torch
