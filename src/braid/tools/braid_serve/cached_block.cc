#include "braid/tools/braid_serve/cached_block.h"

#include <cmath>
#include <string>

namespace braid::serve {
namespace {

using torch::LinearWeights;

std::string name_of(int layer, const char* part) { return "block" + std::to_string(layer) + " " + part; }

}  // namespace

CachedBlock::CachedBlock(train::gpt::Block& full, Communicator& tp, const train::ModelSpec& spec, int layer)
    : ln1_(full.ln1),
      ln2_(full.ln2),
      qkv_(tp, LinearWeights::of(full.attention->qkv),
           torch::ColumnParallelOptions{.parts = 3, .name = name_of(layer, "attention qkv")}),
      up_(tp, LinearWeights::of(full.up), torch::ColumnParallelOptions{.name = name_of(layer, "MLP up")}),
      proj_(tp, LinearWeights::of(full.attention->proj), torch::RowParallelOptions{.name = name_of(layer, "attention proj")}),
      down_(tp, LinearWeights::of(full.down), torch::RowParallelOptions{.name = name_of(layer, "MLP down")}),
      layer_(layer),
      local_heads_(spec.heads / tp.size()),
      head_dim_(spec.width / spec.heads) {}

::torch::Tensor CachedBlock::attend(const ::torch::Tensor& h, torch::PagedKvCache& cache,
                                    torch::PagedKvCache::SequenceId sequence, std::int64_t first) {
  std::int64_t t = h.size(1);
  // [1, t, 3 * local_heads * head_dim] -> q, k, v [local_heads, t, head_dim] (the layout of the
  // single-process view({b, t, 3, heads, head_dim}), restricted to this rank's heads).
  std::vector<::torch::Tensor> q_k_v = qkv_->forward(h).view({t, 3, local_heads_, head_dim_}).permute({1, 2, 0, 3}).unbind(0);
  cache.write(sequence, layer_, first, q_k_v[1], q_k_v[2]);
  ::torch::Tensor keys = cache.keys(sequence, layer_), values = cache.values(sequence, layer_);  // [heads, first + t, d]
  ::torch::Tensor scores = ::torch::matmul(q_k_v[0], keys.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim_));
  if (t > 1) {  // new position first + i may attend cached position j only when j <= first + i
    ::torch::Tensor query = ::torch::arange(first, first + t, ::torch::kInt64).unsqueeze(1);
    ::torch::Tensor key = ::torch::arange(first + t, ::torch::kInt64).unsqueeze(0);
    scores = scores.masked_fill(key > query, -INFINITY);
  }
  ::torch::Tensor mixed = ::torch::matmul(::torch::softmax(scores, -1), values);  // [heads, t, d]
  return proj_->forward(mixed.transpose(0, 1).reshape({1, t, local_heads_ * head_dim_}));
}

::torch::Tensor CachedBlock::forward(const ::torch::Tensor& x, torch::PagedKvCache& cache,
                                     torch::PagedKvCache::SequenceId sequence, std::int64_t first) {
  ::torch::Tensor y = x + attend(ln1_->forward(x), cache, sequence, first);
  return y + down_->forward(::torch::gelu(up_->forward(ln2_->forward(y))));
}

}  // namespace braid::serve
