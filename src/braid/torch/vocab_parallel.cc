#include "braid/torch/vocab_parallel.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/torch/tensor_parallel_mappings.h"

namespace braid::torch {
namespace {

using ::torch::Tensor;
using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

void check_ids(const Tensor& ids, std::int64_t vocab, const Communicator& tp, const char* what) {
  if (ids.numel() == 0) return;
  std::int64_t low = ids.min().item<std::int64_t>(), high = ids.max().item<std::int64_t>();
  if (low >= 0 && high < vocab) return;
  throw InvalidArgument({.rank = tp.rank(), .op = "vocab parallelism"},
                        fmt::format("a {} of {} outside the vocabulary [0, {})", what, low < 0 ? low : high, vocab));
}

Tensor pad_rows(const Tensor& full, std::int64_t rows) {
  if (full.size(0) == rows) return full.detach().clone();
  std::vector<std::int64_t> sizes = full.sizes().vec();
  sizes[0] = rows - full.size(0);
  return ::torch::cat({full.detach(), ::torch::zeros(sizes, full.options())}, 0);
}

// Per-token loss log(sum_j exp(z_j - m)) - (z_target - m) over the whole vocabulary, each rank
// holding its columns. The context keeps the softmax of this rank's columns and where the
// target falls among them.
struct VocabParallelCrossEntropy : public ::torch::autograd::Function<VocabParallelCrossEntropy> {
  static Tensor forward(AutogradContext* ctx, const Tensor& logits, const Tensor& target, std::int64_t comm,
                        std::int64_t vocab) {
    Communicator& tp = *reinterpret_cast<Communicator*>(comm);
    VocabRange range = vocab_range(vocab, tp.rank(), tp.size());
    Tensor z = logits.to(::torch::kFloat32).contiguous();
    std::int64_t real = std::max<std::int64_t>(0, std::min(range.end, vocab) - range.begin);
    if (real < z.size(-1)) {  // padding columns: out of the softmax, so they get no gradient
      z = z.clone();
      z.narrow(-1, real, z.size(-1) - real).fill_(-INFINITY);
    }
    Tensor max = std::get<0>(z.max(-1)).contiguous();
    if (tp.size() > 1) allreduce(tp, max.data_ptr(), max.data_ptr(), max.numel(), DType::kF32, ReduceOp::kMax);
    z = z - max.unsqueeze(-1);
    Tensor in_range = (target >= range.begin).logical_and(target < range.end);
    Tensor local = (target - range.begin).masked_fill(in_range.logical_not(), 0);
    Tensor exp = z.exp();
    // The sum of exponentials and the target's shifted logit, one allreduce for both.
    Tensor sums = ::torch::stack({exp.sum(-1), z.gather(-1, local.unsqueeze(-1)).squeeze(-1) * in_range}, 0).contiguous();
    if (tp.size() > 1) allreduce(tp, sums.data_ptr(), sums.data_ptr(), sums.numel(), DType::kF32, ReduceOp::kSum);
    Tensor sum_exp = sums[0], target_logit = sums[1];
    ctx->save_for_backward({exp / sum_exp.unsqueeze(-1), local, in_range});
    // fp32 at least: bf16 logits (under autocast) get an fp32 loss, as autocast's own
    // cross_entropy gives, instead of a loss rounded to 8 bits; fp64 logits keep fp64.
    return (sum_exp.log() - target_logit).to(::torch::promote_types(logits.scalar_type(), ::torch::kFloat32));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    Tensor grad = saved[0].clone();  // softmax of this rank's columns (0 on the padding)
    Tensor one_hot = ::torch::zeros_like(grad).scatter_(-1, saved[1].unsqueeze(-1), saved[2].unsqueeze(-1).to(grad.dtype()));
    grad = (grad - one_hot) * grads[0].unsqueeze(-1);
    return {grad, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

std::int64_t padded_vocabulary(std::int64_t vocab, int tp) { return (vocab + tp - 1) / tp * tp; }

VocabRange vocab_range(std::int64_t vocab, int rank, int tp) {
  std::int64_t per_rank = padded_vocabulary(vocab, tp) / tp;
  return {rank * per_rank, (rank + 1) * per_rank};
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(Communicator& tp, const ::torch::nn::Embedding& full,
                                                       VocabParallelOptions options)
    : tp_(&tp), vocab_(full->weight.size(0)), range_(vocab_range(vocab_, tp.rank(), tp.size())), options_(options) {
  Tensor padded = pad_rows(full->weight, padded_vocabulary(vocab_, tp.size()));
  weight = register_parameter("weight", padded.narrow(0, range_.begin, range_.size()).contiguous());
}

Tensor VocabParallelEmbeddingImpl::forward(const Tensor& tokens) {
  check_ids(tokens, vocab_, *tp_, "token");
  Tensor mine = (tokens >= range_.begin).logical_and(tokens < range_.end);
  Tensor local = (tokens - range_.begin).masked_fill(mine.logical_not(), 0);
  Tensor partial = ::torch::embedding(weight, local) * mine.unsqueeze(-1).to(weight.dtype());
  return options_.sequence_parallel ? reduce_scatter_to_sp(partial, *tp_, options_.sequence_dim)
                                    : reduce_from_tp(partial, *tp_);
}

void VocabParallelEmbeddingImpl::gather_into(::torch::nn::Embedding& full) {
  ::torch::NoGradGuard no_grad;
  full->weight.copy_(tp_gather_tensor(weight.detach(), *tp_, 0).narrow(0, 0, vocab_));
}

Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& target, Communicator& tp, std::int64_t vocab) {
  check_ids(target, vocab, tp, "target");
  VocabRange range = vocab_range(vocab, tp.rank(), tp.size());
  if (logits.size(-1) != range.size() || logits.sizes().slice(0, logits.dim() - 1) != target.sizes()) {
    throw InvalidArgument({.rank = tp.rank(), .op = "vocab-parallel cross-entropy"},
                          fmt::format("logits of shape {} and targets of shape {}: expected [..., {}] (a vocabulary of "
                                      "{} padded to {} over {} ranks) and [...]",
                                      fmt::join(logits.sizes(), "x"), fmt::join(target.sizes(), "x"), range.size(), vocab,
                                      padded_vocabulary(vocab, tp.size()), tp.size()));
  }
  return VocabParallelCrossEntropy::apply(logits, target, reinterpret_cast<std::int64_t>(&tp), vocab);
}

LinearWeights padded_head(const LinearWeights& full, int tp) {
  std::int64_t padded = padded_vocabulary(full.weight.size(0), tp);
  return {.weight = pad_rows(full.weight, padded), .bias = full.bias.defined() ? pad_rows(full.bias, padded) : Tensor()};
}

}  // namespace braid::torch
