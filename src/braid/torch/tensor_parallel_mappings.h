// Autograd over the tensor-parallel primitives (parallel/tensor_parallel.h): the differentiable
// "mappings" of Megatron-LM that every tensor- and sequence-parallel layer is made of. Each is a
// pair (forward, backward) of conjugate communications over the TP group `tp`:
//
//   copy_to_tp(x)                   identity                 | allreduce of the gradient
//   reduce_from_tp(x)               allreduce                | identity
//   scatter_to_tp(x, dim)           this rank's piece of dim | gather along dim
//   gather_from_tp(x, dim)          gather along dim         | this rank's piece of dim
//   gather_from_sp(x, dim)          gather along dim         | reduce-scatter along dim
//   reduce_scatter_to_sp(x, dim)    reduce-scatter along dim | gather along dim
//
// The `_sp` pair is sequence parallelism's: the activations between the row-parallel layer of
// one block and the column-parallel layer of the next live split along the sequence dimension,
// so the allreduce of plain TP becomes a reduce-scatter, and the column layer's input copy
// becomes an allgather (the same bytes; Korthikanti et al. 2022).
//
// Every rank of `tp` must apply the same mappings to tensors of the same shape in the same
// order, forward and backward (the collectives' ordering contract: a disagreement is a
// braid::Mismatch on the ranks involved). `dim` may be negative (from the end). A dimension that
// tp does not divide (scatter) is InvalidArgument naming the rank, the shape and tp. Tensors may
// be of any dtype braid reduces (float32 in practice); the results are contiguous, and after
// every collective each rank of `tp` holds the same bytes.
//
// REQUIRES: `tp` outlives the autograd graph (the backward calls it).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "braid/comm/communicator.h"

namespace braid::torch {

::torch::Tensor copy_to_tp(const ::torch::Tensor& x, Communicator& tp);
::torch::Tensor reduce_from_tp(const ::torch::Tensor& x, Communicator& tp);
::torch::Tensor scatter_to_tp(const ::torch::Tensor& x, Communicator& tp, std::int64_t dim = -1);
::torch::Tensor gather_from_tp(const ::torch::Tensor& x, Communicator& tp, std::int64_t dim = -1);
::torch::Tensor gather_from_sp(const ::torch::Tensor& x, Communicator& tp, std::int64_t dim);
::torch::Tensor reduce_scatter_to_sp(const ::torch::Tensor& x, Communicator& tp, std::int64_t dim);

// Zero-bubble pipeline schedules (ZB-H1, torch::SequentialStage) differentiate one retained
// graph twice: with respect to the stage's input, then to its weights. The gradient reaching each
// mapping is the same in both passes, so inside a kInput scope each mapping keeps what its
// backward communicated and inside the kWeight scope that follows returns it instead of
// communicating again: one set of TP collectives per backward, as plan/training_traffic.h
// counts (and no collective in the weight pass, whose order across TP ranks then cannot
// matter). A mapping the input pass did not reach communicates in the weight pass as usual.
// Scopes do not nest; the autograd engine runs CPU graphs on the calling thread.
class SplitBackwardScope {
 public:
  enum class Pass { kNone, kInput, kWeight };
  explicit SplitBackwardScope(Pass pass);
  ~SplitBackwardScope();
  SplitBackwardScope(const SplitBackwardScope&) = delete;
  SplitBackwardScope& operator=(const SplitBackwardScope&) = delete;
  static Pass current();

 private:
  Pass previous_;
};

// The communication without autograd, on plain tensors (results are new contiguous tensors):
// what the mappings call, and what callers use outside a graph (gathering shards to export).
::torch::Tensor tp_allreduce_tensor(const ::torch::Tensor& x, Communicator& tp);
::torch::Tensor tp_gather_tensor(const ::torch::Tensor& x, Communicator& tp, std::int64_t dim);
::torch::Tensor tp_reduce_scatter_tensor(const ::torch::Tensor& x, Communicator& tp, std::int64_t dim);
// This rank's piece of `dim` (a contiguous copy).
::torch::Tensor tp_piece(const ::torch::Tensor& x, const Communicator& tp, std::int64_t dim);

}  // namespace braid::torch
