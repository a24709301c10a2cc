// The MoE layer's pipelined path (MoeLayerOptions::chunks > 1): the forward is
// MoeDispatcher::run (Tutel's pipelining: the experts compute on chunk c while chunk c + 1 is
// on the wire, each chunk's results start back as soon as they are ready), whose experts run
// without a graph; the backward recomputes them with one (activation recomputation, as
// checkpointing does), then exchanges as the unpipelined path does:
//
//   forward:  run(plan, x, gates, experts)                      dispatch + reverse, chunked
//   backward: y = experts(saved inputs), with a graph             recomputation
//             return_rows(y) -> d gates = <grad_out, y(t, j)>     one more reverse exchange
//             dispatch_choices(gates x grad_out) -> d y, backward through the experts
//             undispatch(d expert input) -> d x
//
// The price of overlapping the forward: one more reverse exchange (R H b) and the experts'
// forward again in backward; the unpipelined path keeps the returned rows instead. Same
// results per token as the unpipelined path (run's output equals dispatch / combine bit for
// bit; docs/moe.md), expert parameter gradients accumulated by the nested backward (DDP's hooks
// fire on them as usual).
#pragma once

#include <torch/torch.h>

#include "braid/torch/moe_autograd.h"
#include "braid/torch/moe_experts.h"

namespace braid::torch {

// x: [T, H], gates: [T, k] float32 -> [T, H]. REQUIRES: experts outlive the graph.
::torch::Tensor moe_pipelined(const ::torch::Tensor& x, const ::torch::Tensor& gates, MoeExpertsImpl& experts,
                              const MoeExchangeContext& context);

}  // namespace braid::torch
