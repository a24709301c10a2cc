#include "braid/tools/braid_train/trainer_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/torch/zero_checkpoint.h"

namespace braid::train {
namespace {

std::string fingerprint(const TrainerCheckpoint& c) {
  return c.zero ? c.config.zero_fingerprint(c.steps_per_epoch) : c.config.fingerprint(c.comm.size());
}

// A checkpoint of the other kind than the run's, seen by rank 0 (the directory is every rank's).
void refuse_the_other_kind(const TrainerCheckpoint& c) {
  std::string ddp_file = torch::checkpoint_path(c.config.checkpoint_dir);
  std::string zero_file = torch::zero_manifest_path(c.config.checkpoint_dir);
  const std::string& other = c.zero ? ddp_file : zero_file;
  std::uint8_t other_exists = c.comm.rank() == 0 && std::filesystem::exists(other) ? 1 : 0;
  broadcast(c.comm, &other_exists, 1, DType::kU8, 0);
  if (!other_exists) return;
  throw InvalidArgument({.rank = c.comm.rank(), .op = "braid-train --resume"},
                        fmt::format("{} holds a {} checkpoint ({}), and this run has --zero {}: resume it with {}, or "
                                    "use another --checkpoint-dir",
                                    c.config.checkpoint_dir, c.zero ? "DDP (--zero 0)" : "sharded ZeRO (--zero 1 or 2)",
                                    other, c.config.zero, c.zero ? "--zero 0 at its world size" : "--zero 1 or 2"));
}

}  // namespace

std::string TrainerCheckpoint::path() const {
  return zero ? torch::zero_manifest_path(config.checkpoint_dir) : torch::checkpoint_path(config.checkpoint_dir);
}

void save_trainer_checkpoint(const TrainerCheckpoint& c, const torch::TrainingPosition& position) {
  if (c.zero) {
    torch::save_zero_checkpoint(c.comm, c.config.checkpoint_dir, *c.zero, position, fingerprint(c));
  } else {
    torch::save_checkpoint(c.comm, c.config.checkpoint_dir, c.ddp, *c.optimizer, position, fingerprint(c));
  }
}

std::optional<torch::TrainingPosition> load_trainer_checkpoint(const TrainerCheckpoint& c) {
  std::optional<torch::TrainingPosition> position =
      c.zero ? torch::load_zero_checkpoint(c.comm, c.config.checkpoint_dir, *c.zero, fingerprint(c))
             : torch::load_checkpoint(c.comm, c.config.checkpoint_dir, c.ddp, *c.optimizer, fingerprint(c));
  if (!position) refuse_the_other_kind(c);
  return position;
}

}  // namespace braid::train
