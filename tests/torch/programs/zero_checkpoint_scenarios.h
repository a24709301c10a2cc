// What the rank program braid-zero-checkpoint-rank's two files share: the stage-1/2 scenarios
// (zero_checkpoint_scenarios.cc, which holds main) and stage 3's (fully_sharded_checkpoint_scenarios.cc).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"

// sgd (momentum 0.9), adam-amsgrad (three state tensors) or adamw over `params`.
std::unique_ptr<torch::optim::Optimizer> make_checkpoint_optimizer(const std::string& kind, std::vector<torch::Tensor> params);

// The world's first `n` ranks (nullopt on the others). Collective over the world.
std::optional<braid::Communicator> first_ranks(braid::Communicator& world, int n);

// The damage `name` does to the checkpoint in `dir` saved at `world` ranks: flipped-byte (in
// zero-1-rank0.pt), damaged-manifest, truncated-shard (zero-1-rank0.pt halved), missing-shard
// (the last rank's file removed); another-model does nothing (the loader's model differs).
void damage_checkpoint(const std::string& name, const std::string& dir, int world);

// Stage 3 (fully_sharded_checkpoint_scenarios.cc):
//   reshard3   a FullyShardedModule and a ZeroOptimizer over the same layers, parameters and
//              optimizer state set to known functions of (parameter name, element), saved at
//              n = 1..W; each checkpoint loaded at m = 1..W into stage 3 (from stage 3 and from
//              stage 1) and into stage 1 (from stage 3): "RESHARD3 <kind> <saved by> <n> -> <into>
//              <m> faults F" per rank of m, F counting every shard element, padding, state tensor,
//              step and whole parameter that is not what was saved for it
//   refused3   the damages above loaded into a FullyShardedModule that has stepped: "REFUSED3
//              <case> <error kind> unchanged <1|0>", 1 when its shards and optimizer state are bit
//              for bit those of before the load
bool is_fully_sharded_checkpoint_scenario(const std::string& name);
void run_fully_sharded_checkpoint_scenario(braid::Communicator& world, const std::string& name, const std::string& dir);
