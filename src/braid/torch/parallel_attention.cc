#include "braid/torch/parallel_attention.h"

#include <fmt/format.h>

#include <cmath>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

void check_heads(const Communicator& tp, std::int64_t width, const ParallelAttentionOptions& o) {
  if (o.heads > 0 && width % o.heads == 0 && o.heads % tp.size() == 0) return;
  throw InvalidArgument({.rank = tp.rank(), .op = "tensor parallelism"},
                        fmt::format("{}: {} heads of width {} cannot be split over tp {} (the heads must divide the "
                                    "width and tp must divide the heads)",
                                    o.name, o.heads, width, tp.size()));
}

}  // namespace

ParallelSelfAttentionImpl::ParallelSelfAttentionImpl(Communicator& tp, const LinearWeights& qkv_full,
                                                     const LinearWeights& proj_full, ParallelAttentionOptions options)
    : options_(std::move(options)) {
  std::int64_t width = proj_full.weight.size(0);
  check_heads(tp, width, options_);
  if (options_.dropout > 0 && options_.rng == nullptr) {
    throw InvalidArgument({.rank = tp.rank(), .op = "tensor parallelism"}, options_.name + ": dropout without an rng");
  }
  local_heads_ = options_.heads / tp.size();
  head_dim_ = width / options_.heads;
  qkv = register_module("qkv", ColumnParallelLinear(tp, qkv_full,
                                                    ColumnParallelOptions{.sequence_parallel = options_.sequence_parallel, .parts = 3,
                                                     .name = options_.name + " qkv"}));
  proj = register_module("proj", RowParallelLinear(tp, proj_full,
                                                   RowParallelOptions{.sequence_parallel = options_.sequence_parallel,
                                                    .name = options_.name + " proj"}));
  mask_ = register_buffer("mask", ::torch::tril(::torch::ones({options_.context, options_.context}, ::torch::kBool)));
}

::torch::Tensor ParallelSelfAttentionImpl::forward(const ::torch::Tensor& x) {
  ::torch::Tensor local = qkv->forward(x);  // [b, t, 3 * local_heads * head_dim]
  std::int64_t b = local.size(0), t = local.size(1);
  std::vector<::torch::Tensor> q_k_v = local.view({b, t, 3, local_heads_, head_dim_}).permute({2, 0, 3, 1, 4}).unbind(0);
  ::torch::Tensor scores =
      ::torch::matmul(q_k_v[0], q_k_v[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim_));
  using ::torch::indexing::Slice;
  scores = scores.masked_fill(mask_.index({Slice(0, t), Slice(0, t)}).logical_not(), -INFINITY);
  ::torch::Tensor probs = ::torch::softmax(scores, -1);
  if (options_.dropout > 0) probs = TensorParallelRng::dropout(probs, options_.dropout, is_training(), options_.rng->tensor_parallel());
  ::torch::Tensor mixed = ::torch::matmul(probs, q_k_v[2]);  // [b, local_heads, t, head_dim]
  return proj->forward(mixed.transpose(1, 2).reshape({b, t, local_heads_ * head_dim_}));
}

}  // namespace braid::torch
