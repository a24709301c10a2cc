// Random streams for dropout under tensor parallelism (Megatron-LM's RNG tracker, without the
// global state): two generators per rank.
//
//   replicated()       the same sequence on every rank of a TP group: for dropout on tensors
//                      every TP rank holds whole (the residual stream without sequence
//                      parallelism), so the replicas stay identical.
//   tensor_parallel()  a different sequence on each TP rank: for dropout inside a TP region (a
//                      rank's own attention heads) and on sequence shards, where each rank holds
//                      different elements and identical masks would correlate them.
//
// Seeds: replicated = seed + 100 x pipeline stage (stages hold different layers), tensor-parallel
// = that + 2718 + TP rank (Megatron's offsets). Data-parallel replicas share both: they see
// different data. state() / set_state() carry both streams through a checkpoint, so a resumed
// run draws the same masks as an uninterrupted one.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <cstdint>

namespace braid::torch {

class TensorParallelRng {
 public:
  TensorParallelRng(std::uint64_t seed, int tp_rank, int pipeline_stage = 0);

  at::Generator& replicated() { return replicated_; }
  at::Generator& tensor_parallel() { return tensor_parallel_; }

  // Inverted dropout (kept elements scaled by 1/(1-p)) with a mask from `generator`. p = 0 or
  // not training: x itself, drawing nothing.
  static ::torch::Tensor dropout(const ::torch::Tensor& x, double p, bool training, at::Generator& generator);

  // Both generators' states as one uint8 tensor, and back. set_state throws InvalidArgument
  // for a tensor that state() did not produce.
  ::torch::Tensor state() const;
  void set_state(const ::torch::Tensor& state);

 private:
  at::Generator replicated_, tensor_parallel_;
};

}  // namespace braid::torch
