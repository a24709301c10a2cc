// The MoE layer's pipelined path (MoeLayerOptions::chunks > 1), both directions chunked
// (Tutel's pipelining):
//
//   forward:  run_choices(plan, x, experts)      chunk c's experts compute (with a graph) while
//                                                chunk c + 1 is on the wire; one row per choice back
//             out[t] = sum_j gates[t, j] y(t, j) locally, as moe_combine does
//   backward: d gates[t, j] = <grad_out[t], y(t, j)> from the rows kept in the forward
//             run_backward(plan, gates x grad_out)  chunk c's expert backward (through the graph
//                                                kept from the forward) while chunk c + 1's
//                                                gradient is on the wire; each chunk's input
//                                                gradient starts back as soon as it is ready
//
// So the pipelined path moves exactly the bytes of the unpipelined one (moe_autograd.h) and
// computes the same per-row arithmetic; what differs is that an expert's parameter gradient is
// summed chunk by chunk (one matmul per chunk, then accumulated) instead of over all its rows
// at once, a float reassociation (tested within rtol 1e-4 against the unpipelined EP = 1 layer,
// docs/moe.md). Each chunk's graph is kept from the forward to its backward (the activations the
// unpipelined path keeps too) and released by the backward: a second backward through the same
// forward (retain_graph) is refused with InvalidArgument. Each chunk's backward computes its
// parameter gradients with autograd::grad (no accumulation); their sum over the chunks goes into
// the experts' .grad once, at the end of the layer's backward, through autograd, so that each
// parameter's grad-accumulator hooks (DDP's) fire once per backward as on the unpipelined path.
#pragma once

#include <torch/torch.h>

#include "braid/torch/moe_autograd.h"
#include "braid/torch/moe_experts.h"

namespace braid::torch {

// x: [T, H], gates: [T, k] float32 -> [T, H]. REQUIRES: experts outlive the graph.
::torch::Tensor moe_pipelined(const ::torch::Tensor& x, const ::torch::Tensor& gates, MoeExpertsImpl& experts,
                              const MoeExchangeContext& context);

}  // namespace braid::torch
