// The gradient norm of a model split over a mesh, and what sequence parallelism owes the
// replicated parameters' gradients.
//
// global_gradient_norm: the 2-norm of the whole model's gradient, with each parameter counted
// once although it is spread over tensor- and pipeline-parallel ranks. Split parameters (a
// TensorParallelModule's split_parameters()) hold disjoint pieces on the TP ranks and are
// counted on every rank; replicated ones (LayerNorms, row-parallel biases) are the same on every
// TP rank and counted on TP rank 0 only — counting them tp times is the classic bug that makes
// the clipping threshold depend on the layout. The squares are summed over `model_parallel`
// (the tp x pp group of the rank: the ranks that together hold one copy of the model). Data-
// parallel replicas compute the same norm from their (averaged, identical) gradients, so call it
// after the data-parallel gradient sync.
//
// clip_gradients_by_global_norm scales every gradient by max_norm / norm when the norm exceeds
// max_norm (torch.nn.utils.clip_grad_norm_'s rule, with its 1e-6) and returns the norm before
// clipping; a non-finite norm is returned and nothing is scaled (the caller's finite-loss check
// decides). Every rank of the mesh ends with the same scale.
//
// sync_sequence_parallel_gradients: under sequence parallelism a replicated parameter sees only
// its rank's sequence shard, so its gradient is a partial sum: this sums it over the TP group
// (one allreduce of all of them, flattened), before the data-parallel sync.
//
// Collective: every rank of the group calls with its parameters in the same order.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "braid/comm/communicator.h"

namespace braid::torch {

struct ParameterSplit {
  std::vector<::torch::Tensor> split;       // different pieces on each TP rank
  std::vector<::torch::Tensor> replicated;  // the same on every TP rank
};

// Sorts `module`'s parameters by the TensorParallelModule interface of the modules holding them.
ParameterSplit split_by_tensor_parallelism(::torch::nn::Module& module);

double global_gradient_norm(const ParameterSplit& params, int tp_rank, Communicator& model_parallel);
double clip_gradients_by_global_norm(const ParameterSplit& params, double max_norm, int tp_rank,
                                     Communicator& model_parallel);

void sync_sequence_parallel_gradients(const std::vector<::torch::Tensor>& replicated, Communicator& tp);

}  // namespace braid::torch
