// The two ends of a language model split over the vocabulary (Megatron-LM's
// VocabParallelEmbedding and vocab-parallel cross-entropy), so that neither the embedding table
// nor the logits ever exist whole on one rank.
//
// The vocabulary of V tokens is padded to Vp, the next multiple of tp, and rank r owns tokens
// [r Vp/tp, (r+1) Vp/tp). Padding rows start at zero, are never looked up (tokens are < V) and
// their logits are masked out of the softmax, so they neither produce output nor receive
// gradient: they stay zero however long the model trains.
//
//   VocabParallelEmbedding   tokens [b, t] -> [b, t, h]: each rank looks up the tokens it owns
//                            (the others give zero rows), then the partial rows are summed over
//                            the group (reduce_from_tp), or reduce-scattered along the sequence
//                            with sequence parallelism ([b, t/tp, h] per rank).
//   vocab_parallel_cross_entropy(logits, target)
//                            logits [..., Vp/tp] (a column-parallel head's output), target [...]
//                            (int64, < V) -> the per-token loss [...], the same on every rank.
//                            Three small allreduces of [...]-shaped values (the max for a stable
//                            softmax, then the sum of exponentials and the target's logit
//                            together); the backward needs none: softmax minus one-hot, on this
//                            rank's columns.
//
// The results equal the single-process embedding and cross-entropy up to floating-point
// summation order (the sum of exponentials is added up in tp pieces). Tokens or targets outside
// [0, V) are InvalidArgument naming the rank and the value, raised on the rank that holds them.
// REQUIRES: `tp` outlives the module and its autograd graphs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/torch/tensor_parallel_layers.h"

namespace braid::torch {

// The vocabulary rows of rank `rank`: [begin, end) of the padded table.
struct VocabRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};
std::int64_t padded_vocabulary(std::int64_t vocab, int tp);
VocabRange vocab_range(std::int64_t vocab, int rank, int tp);

struct VocabParallelOptions {
  bool sequence_parallel = false;
  std::int64_t sequence_dim = 1;
};

class VocabParallelEmbeddingImpl : public ::torch::nn::Module, public TensorParallelModule {
 public:
  // From the full table [V, h] (rows of the padding start at zero).
  VocabParallelEmbeddingImpl(Communicator& tp, const ::torch::nn::Embedding& full, VocabParallelOptions options = {});
  ::torch::Tensor forward(const ::torch::Tensor& tokens);
  std::vector<::torch::Tensor> split_parameters() const override { return {weight}; }
  // Collective: the whole table (without the padding) into `full`.
  void gather_into(::torch::nn::Embedding& full);
  VocabRange range() const { return range_; }

  ::torch::Tensor weight;  // [Vp / tp, h]

 private:
  Communicator* tp_;
  std::int64_t vocab_;
  VocabRange range_;
  VocabParallelOptions options_;
};
BRAID_TORCH_MODULE(VocabParallelEmbedding);

// `vocab` is the real vocabulary V; the columns of `logits` at or past V (padding) are ignored.
::torch::Tensor vocab_parallel_cross_entropy(const ::torch::Tensor& logits, const ::torch::Tensor& target,
                                             Communicator& tp, std::int64_t vocab);

// A column-parallel output head's full parameters for the padded vocabulary: weight [V, h]
// padded with zero rows to [Vp, h] (and the bias [V] to [Vp]), ready for ColumnParallelLinear.
LinearWeights padded_head(const LinearWeights& full, int tp);

}  // namespace braid::torch
