// Megatron-LM's tensor-parallel linear layers for LibTorch, over a TP group (a Communicator: the
// "tp" axis of a parallel::ProcessMesh, or any group). Each is built from the full
// torch::nn::Linear it replaces (the same on every rank: build the model from one seed, then
// shard it; LinearWeights::of(linear)), so a TP model starts from exactly the parameters of its single-process twin.
//
//   ColumnParallelLinear  y = x A^T + b with A split by rows (output features): rank r holds
//                         out/tp of them. Input replicated (copy_to_tp: the gradient is
//                         allreduced), output split along the last dimension unless
//                         gather_output. `parts` > 1 splits each of `parts` equal blocks of the
//                         output separately (a fused q|k|v projection: every rank gets its heads
//                         of q, of k and of v).
//   RowParallelLinear     y = x A^T + b with A split by columns (input features): input split
//                         along the last dimension (input_is_parallel) or split here; the
//                         partial products are allreduced (reduce_from_tp), then the bias (kept
//                         whole on every rank) is added once.
//
// Sequence parallelism (sequence_parallel = true): the column layer's input arrives split along
// `sequence_dim` and is allgathered (gather_from_sp), the row layer's output is reduce-scattered
// along it (reduce_scatter_to_sp) instead of allreduced. The row layer's bias is then trained on
// a sequence shard: its gradient must be summed over the TP group (sync_sequence_parallel_grads
// in gradient_clipping.h does it for every replicated parameter).
//
// Mixed precision (CPU autocast in bf16, torch/mixed_precision.h): the column layer casts its
// input to bf16 before the collective instead of letting the linear cast it after, which is the
// same cast, so the forward is unchanged while its collectives move 16 bits: the allgather of
// sequence parallelism, and in the backward the allreduce (or reduce-scatter) of the input's
// gradient, a sum of bf16 partial products. The row layer's partial products are bf16 already
// (autocast's matmul), so its allreduce or reduce-scatter is 16-bit too. That is Megatron's
// choice (its activations are bf16 throughout); docs/tensor-parallel.md measures the bytes.
//
// Bad shapes (out or in features that tp x parts does not divide, gather_output with parts > 1)
// are InvalidArgument naming the layer, its shape and tp, on every rank (the check is local and
// the same everywhere). REQUIRES: `tp` outlives the layer and its autograd graphs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"

// TORCH_MODULE names torch::nn unqualified, which braid::torch's own namespace shadows.
#define BRAID_TORCH_MODULE(Name)                                           \
  class Name : public ::torch::nn::ModuleHolder<Name##Impl> {              \
   public:                                                                 \
    using ::torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;             \
    using Impl = Name##Impl;                                               \
  }

namespace braid::torch {

// What a tensor-parallel module tells the code around it: which of its parameters are split
// across the TP group (each rank holds a different piece, so a global norm counts every piece)
// — the others are replicated (the same on every TP rank).
class TensorParallelModule {
 public:
  virtual ~TensorParallelModule() = default;
  virtual std::vector<::torch::Tensor> split_parameters() const = 0;
};

// A linear layer's parameters: weight [out, in], bias [out] (undefined: no bias).
struct LinearWeights {
  ::torch::Tensor weight, bias;
  static LinearWeights of(const ::torch::nn::Linear& linear) { return {linear->weight, linear->bias}; }
  // Copies into `linear` (no grad), `rows` first output rows only when >= 0 (a padded head).
  void copy_into(::torch::nn::Linear& linear, std::int64_t rows = -1) const;
};

struct ColumnParallelOptions {
  bool gather_output = false;
  bool sequence_parallel = false;
  std::int64_t sequence_dim = 1;  // [batch, seq, hidden]
  std::int64_t parts = 1;
  std::string name = "column-parallel linear";  // names the layer in errors
};

class ColumnParallelLinearImpl : public ::torch::nn::Module, public TensorParallelModule {
 public:
  ColumnParallelLinearImpl(Communicator& tp, const LinearWeights& full, ColumnParallelOptions options = {});
  ::torch::Tensor forward(const ::torch::Tensor& x);
  std::vector<::torch::Tensor> split_parameters() const override;
  // Collective over the TP group: the whole weight and bias.
  LinearWeights gathered();

  ::torch::Tensor weight, bias;  // [out / tp, in], [out / tp] (bias undefined without one)

 private:
  Communicator* tp_;
  ColumnParallelOptions options_;
};
BRAID_TORCH_MODULE(ColumnParallelLinear);

struct RowParallelOptions {
  bool input_is_parallel = true;
  bool sequence_parallel = false;
  std::int64_t sequence_dim = 1;
  std::string name = "row-parallel linear";
};

class RowParallelLinearImpl : public ::torch::nn::Module, public TensorParallelModule {
 public:
  RowParallelLinearImpl(Communicator& tp, const LinearWeights& full, RowParallelOptions options = {});
  ::torch::Tensor forward(const ::torch::Tensor& x);
  std::vector<::torch::Tensor> split_parameters() const override;  // the weight (the bias is replicated)
  LinearWeights gathered();

  ::torch::Tensor weight, bias;  // [out, in / tp], [out]

 private:
  Communicator* tp_;
  RowParallelOptions options_;
};
BRAID_TORCH_MODULE(RowParallelLinear);

// Rows of `full` (dim 0) split for rank `rank` of `tp` ranks, each of `parts` blocks separately,
// and the inverse over a TP group. Exposed for layers with their own parameters (embeddings).
::torch::Tensor split_rows(const ::torch::Tensor& full, int rank, int tp, std::int64_t parts = 1);
::torch::Tensor gather_rows(const ::torch::Tensor& shard, Communicator& tp, std::int64_t parts = 1);

}  // namespace braid::torch
