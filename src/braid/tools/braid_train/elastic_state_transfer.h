// What a newcomer to braid-train --elastic needs besides the parameters (which the new DDP's
// broadcast gives it, as at the start): the optimizer's state, the step and epoch counters and
// the run's length, and the loss history the epoch lines average. Rank 0 of the new generation
// (always an old member: newcomers' ids are larger than every member's) sends them in three
// broadcasts; the old members receive them too and check that the step is theirs, so a
// generation that disagrees on where it stands is a Mismatch, not a silently forked run.
// The data position needs no transfer: step t trains on the epoch's permutation drawn from
// --seed, whatever the world (elastic_trainer.h). docs/reliability.md#rejoin.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "braid/comm/communicator.h"

namespace braid::train {

struct TrainingPosition {
  std::int64_t step = 0;              // steps completed
  std::int64_t steps_per_epoch = 0;   // the first world's (the epoch's length never changes)
  std::int64_t total_steps = 0;
  std::int64_t epochs_evaluated = 0;  // epochs whose evaluation every member has run
  std::vector<double> step_losses;    // per completed step: the global batch's mean loss
};

// Collective over `comm`. `newcomer`: this rank receives into `position` and `optimizer`; else
// it holds the state, and rank 0's is sent (the others check its step against theirs).
void share_training_state(Communicator& comm, TrainingPosition& position, ::torch::optim::Optimizer& optimizer,
                          bool newcomer);

}  // namespace braid::train
