// Checkpoints of the data-parallel trainer (trainer.cc): DDP's single file (torch/checkpoint.h)
// with --zero 0, the sharded checkpoint (torch/zero_checkpoint.h) with --zero 1, 2 or 3, which
// resumes at any world size whose epoch has as many steps (TrainConfig::zero_fingerprint), and
// under any of the three stages: they compute the same numbers, and the checkpoint records each
// parameter's elements by name (stage 3's parameters are named as in the whole model, with the
// "layers." of TrainModel's Sequential, like those of stages 1-2).
//
// A directory may hold either kind. Resuming from the other kind than the run's is refused on
// every rank, naming both (a DDP checkpoint holds whole optimizer state for one world size, a
// ZeRO checkpoint only shards of it), rather than reported as "no checkpoint": with
// --resume-if-present that would silently start over next to a good checkpoint.
//
// fp16: the loss scaler's state is saved with either kind (in the ZeRO manifest, or as a checked
// tensor of checkpoint.pt) and restored by the load, so a resumed run uses the scale the saving
// run had reached.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/parallel/loss_scaler.h"
#include "braid/torch/checkpoint.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/fully_sharded.h"
#include "braid/torch/zero_optimizer.h"
#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

struct TrainerCheckpoint {
  Communicator& comm;
  const TrainConfig& config;
  torch::DistributedDataParallel* ddp = nullptr;    // --zero 0, 1, 2
  ::torch::optim::Optimizer* optimizer = nullptr;  // --zero 0
  torch::ZeroOptimizer* zero = nullptr;            // --zero 1 or 2
  torch::FullyShardedModule* sharded = nullptr;    // --zero 3
  parallel::DynamicLossScaler* scaler = nullptr;   // --precision fp16: saved and restored
  std::int64_t steps_per_epoch = 0;

  bool sharded_kind() const { return zero != nullptr || sharded != nullptr; }
  // The file whose presence means a checkpoint of this run's kind: checkpoint.pt or the manifest.
  std::string path() const;
};

// Collective.
void save_trainer_checkpoint(const TrainerCheckpoint& checkpoint, const torch::TrainingPosition& position);
// Collective. nullopt when the directory holds no checkpoint of either kind. Throws
// InvalidArgument on every rank for one of the other kind, and whatever the loaders throw.
std::optional<torch::TrainingPosition> load_trainer_checkpoint(const TrainerCheckpoint& checkpoint);

}  // namespace braid::train
