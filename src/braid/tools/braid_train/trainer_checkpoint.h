// Checkpoints of the data-parallel trainer (trainer.cc): DDP's single file (torch/checkpoint.h)
// with --zero 0, the sharded checkpoint (torch/zero_checkpoint.h) with --zero 1 or 2, which
// resumes at any world size whose epoch has as many steps (TrainConfig::zero_fingerprint).
//
// A directory may hold either kind. Resuming from the other kind than the run's is refused on
// every rank, naming both (a DDP checkpoint holds whole optimizer state for one world size, a
// ZeRO checkpoint only shards of it), rather than reported as "no checkpoint": with
// --resume-if-present that would silently start over next to a good checkpoint.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/torch/checkpoint.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/zero_optimizer.h"
#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

struct TrainerCheckpoint {
  Communicator& comm;
  const TrainConfig& config;
  torch::DistributedDataParallel& ddp;
  ::torch::optim::Optimizer* optimizer = nullptr;  // --zero 0
  torch::ZeroOptimizer* zero = nullptr;            // --zero 1 or 2
  std::int64_t steps_per_epoch = 0;

  // The file whose presence means a checkpoint of this run's kind: checkpoint.pt or the manifest.
  std::string path() const;
};

// Collective.
void save_trainer_checkpoint(const TrainerCheckpoint& checkpoint, const torch::TrainingPosition& position);
// Collective. nullopt when the directory holds no checkpoint of either kind. Throws
// InvalidArgument on every rank for one of the other kind, and whatever the loaders throw.
std::optional<torch::TrainingPosition> load_trainer_checkpoint(const TrainerCheckpoint& checkpoint);

}  // namespace braid::train
