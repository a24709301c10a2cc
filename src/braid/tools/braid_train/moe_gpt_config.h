// braid-train's MoE settings (--model moe-gpt): the flags and their checks. Torch-free (in
// train_core with the rest of the configuration).
//
//   --ep N                 expert-parallel ranks: each MoE layer's experts spread over EP groups
//                          of N data-parallel ranks (N must divide world / (tp x pp));
//                          the replicas of an expert shard are world / (N tp)
//                          (base/moe_mesh_layout.h, moe_data_parallel.h)
//   --experts E            experts per MoE layer (divisible by --ep)
//   --top-k K              1 (Switch) or 2 (GShard)
//   --capacity-factor CF   > 0, or `dropless` (no capacity: nothing dropped). 0 is refused
//                          rather than meaning dropless: a zero capacity factor is the layer's
//                          error everywhere else (docs/moe.md), and a word cannot be mistaken
//   --aux-loss-coef A      load-balancing loss weight (>= 0)
//   --z-loss-coef Z        router z-loss weight (>= 0; 0 leaves it out)
//   --moe-chunks C         the exchange in C pipelined chunks (Tutel), forward and backward
//                          (torch/moe_pipelined.h); 1 unpipelined
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace braid::train {

struct MoeTrainConfig {
  int ep = 1;
  int experts = 8;
  int top_k = 1;
  std::string capacity_factor = "1.25";  // a number > 0, or "dropless"
  double aux_loss_coef = 0.01;
  double z_loss_coef = 0.001;
  int chunks = 1;

  bool dropless() const { return capacity_factor == "dropless"; }
  double capacity() const;  // the number (1 when dropless: unused)
};

void add_moe_flags(CLI::App& app, MoeTrainConfig& config);

struct TrainConfig;
// --model moe-gpt's flags, and the MoE flags without it: InvalidArgument naming the flag.
// moe-gpt runs on the MoE trainer (moe_gpt_trainer.h, the mesh edp x ep x tp), which refuses
// what it does not combine with yet: --pp, --sp, --zero, --precision other than fp32, --compress,
// --accumulate, --dropout, checkpoints, --clip-grad.
void validate_moe(const TrainConfig& config, int world);

}  // namespace braid::train
