// This rank's experts of a MoE layer: `local` two-layer MLPs (hidden -> ffn -> GELU -> hidden,
// the GPT's MLP), global ids [first, first + local). Each expert's parameters are drawn from
// the global torch RNG in the order of the global ids, every expert of the layer in turn (the
// others' draws are discarded), so that expert e starts with the same values whatever the EP
// size: EP = 4's rank 2 holds what a single process holding all experts holds as experts 4, 5
// of 8. The cost is drawing the whole layer once at construction.
#pragma once

#include <torch/torch.h>

#include "braid/torch/tensor_parallel_layers.h"  // BRAID_TORCH_MODULE

#include <cstdint>
#include <span>

namespace braid::torch {

class MoeExpertsImpl : public ::torch::nn::Module {
 public:
  // Registers "expert<i>_up" / "expert<i>_down" for local i (names local: the replicas of one
  // shard agree on them, model_agreement.h).
  MoeExpertsImpl(int experts, int first, int local, std::int64_t hidden, std::int64_t ffn);
  // rows: [R, hidden], local expert i's rows [offsets[i], offsets[i + 1]) -> the same rows of
  // the result. offsets: local + 1 entries, offsets[0] = 0, offsets[local] = R.
  ::torch::Tensor forward(const ::torch::Tensor& rows, std::span<const std::int64_t> offsets);

  int local() const { return static_cast<int>(up_.size()); }
  int first() const { return first_; }

 private:
  int first_;
  std::vector<::torch::nn::Linear> up_, down_;
};
BRAID_TORCH_MODULE(MoeExperts);

}  // namespace braid::torch
