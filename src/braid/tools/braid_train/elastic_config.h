// What braid-train --elastic can recover, as a check of the flags (torch-free): the DDP
// trainer's replicas hold the whole state, so any survivor can continue from its own copy; the
// modes below keep state that only the lost rank held, and are refused naming why.
#pragma once

#include <string>

#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

// "" when `config` can run with --elastic, else why not (it names the flag and the next step).
std::string elastic_refusal(const TrainConfig& config);

}  // namespace braid::train
