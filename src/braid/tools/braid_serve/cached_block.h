// One transformer block of braid-train's GPT (tools/braid_train/gpt_layers.h) for incremental
// decoding: the block's parameters sharded over a TP group exactly as make_tensor_parallel_gpt
// shards them (torch::ColumnParallelLinear for q|k|v and the MLP's up projection,
// torch::RowParallelLinear for the attention output and the MLP's down projection, LayerNorms
// replicated), and attention that reads this rank's heads of K and V from a paged cache instead of
// recomputing them: only the new positions go through the block.
//
// Two allreduces per call (the row-parallel outputs), both through braid's allreduce (the tuner
// picks the algorithm; docs/serving.md says which). With tp 1 there is none.
//
// Thread-safety: none (the decoder's thread).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/gpt_layers.h"
#include "braid/torch/paged_kv_cache.h"
#include "braid/torch/tensor_parallel_layers.h"

namespace braid::serve {

class CachedBlock {
 public:
  // REQUIRES: tp divides spec.heads (GptDecoder checks it); `full` and `tp` outlive the block.
  CachedBlock(train::gpt::Block& full, Communicator& tp, const train::ModelSpec& spec, int layer);

  // x: [1, t, width], the residual stream of positions [first, first + t) of `sequence`, whose
  // cache slots exist already (PagedKvCache::extend). Writes their K and V into layer `layer`
  // of the cache and returns the block's output, [1, t, width], identical on every TP rank.
  ::torch::Tensor forward(const ::torch::Tensor& x, torch::PagedKvCache& cache, torch::PagedKvCache::SequenceId sequence,
                          std::int64_t first);

 private:
  ::torch::Tensor attend(const ::torch::Tensor& h, torch::PagedKvCache& cache, torch::PagedKvCache::SequenceId sequence,
                         std::int64_t first);

  ::torch::nn::LayerNorm ln1_, ln2_;
  torch::ColumnParallelLinear qkv_, up_;
  torch::RowParallelLinear proj_, down_;
  int layer_;
  std::int64_t local_heads_, head_dim_;
};

}  // namespace braid::serve
