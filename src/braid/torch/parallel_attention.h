// Causal multi-head self-attention with its heads split across a TP group (Megatron-LM's
// ParallelAttention): the fused q|k|v projection is a ColumnParallelLinear of 3 parts (each
// rank computes its heads' queries, keys and values), attention runs on the local heads only,
// and the output projection is a RowParallelLinear whose allreduce (or, with sequence
// parallelism, reduce-scatter) combines the heads. One allreduce forward and one backward per
// call, as for the MLP.
//
// Built from the single-process layer's parameters: qkv [3h, h] with rows ordered q, k, v and
// within each head by head (the layout of view({b, t, 3, heads, head_dim})), proj [h, h].
// Input and output: [batch, seq, h], or [batch, seq / tp, h] per rank with sequence parallelism.
// Attention-probability dropout (inside the TP region) draws from the TP stream of `rng`.
//
// heads not divisible by tp, or a width the heads do not divide, are InvalidArgument naming
// `name`, the heads, the width and tp.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/torch/tensor_parallel_layers.h"
#include "braid/torch/tensor_parallel_rng.h"

namespace braid::torch {

struct ParallelAttentionOptions {
  std::int64_t heads = 1;
  std::int64_t context = 1;        // the longest sequence (size of the causal mask)
  bool sequence_parallel = false;
  double dropout = 0;              // on the attention probabilities, while training
  TensorParallelRng* rng = nullptr;  // required when dropout > 0
  std::string name = "attention";
};

class ParallelSelfAttentionImpl : public ::torch::nn::Module {
 public:
  ParallelSelfAttentionImpl(Communicator& tp, const LinearWeights& qkv, const LinearWeights& proj,
                            ParallelAttentionOptions options);
  ::torch::Tensor forward(const ::torch::Tensor& x);

  ColumnParallelLinear qkv{nullptr};
  RowParallelLinear proj{nullptr};

 private:
  std::int64_t local_heads_, head_dim_;
  ParallelAttentionOptions options_;
  ::torch::Tensor mask_;
};
BRAID_TORCH_MODULE(ParallelSelfAttention);

}  // namespace braid::torch
