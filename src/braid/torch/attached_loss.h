// braid::torch::attach_loss: carry a side loss (a MoE layer's load-balancing and z-loss) in
// the backward of an activation, so that it is differentiated wherever that activation is,
// without being added to the model's final loss.
//
//   ::torch::Tensor y = moe(x);
//   y = attach_loss(y, moe->auxiliary_loss(), 1.0 / microbatches);
//   ... y flows on, through other pipeline stages, to the task loss ...
//   // backward through y also adds scale x d(aux)/d(theta) to the router's .grad
//
// A pipeline stage backpropagates from its output with the gradient its neighbour sent; only
// the last stage has the task loss. An auxiliary loss computed on an earlier stage would
// otherwise have to travel to the last stage or be backpropagated separately, at the right
// moment of every schedule. Attached to the output, it is backpropagated exactly when (and
// as often as) that micro-batch's backward runs, on every schedule, with no extra message
// (Megatron-Core's MoEAuxLossAutoScaler does the same). In one process, attaching and adding
// `scale x loss` to the final loss give the same gradients.
//
// Forward returns `output`'s values unchanged (no copy). Backward passes the incoming gradient
// through and seeds `loss` with `scale` (a scalar, or its elements all with `scale`).
// REQUIRES: loss is a scalar tensor; scale finite.
#pragma once

#include <torch/torch.h>

namespace braid::torch {

::torch::Tensor attach_loss(const ::torch::Tensor& output, const ::torch::Tensor& loss, double scale);

}  // namespace braid::torch
