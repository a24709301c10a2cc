#include "braid/tools/braid_train/trainer_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/torch/zero_checkpoint.h"

namespace braid::train {
namespace {

std::string fingerprint(const TrainerCheckpoint& c) {
  return c.sharded_kind() ? c.config.zero_fingerprint(c.steps_per_epoch) : c.config.fingerprint(c.comm.size());
}

// TrainModel registers its Sequential as "layers": stage 3's names then read as stages 1-2's.
torch::ZeroCheckpointView view_of(const TrainerCheckpoint& c) {
  return c.zero ? torch::checkpoint_view(*c.zero) : torch::checkpoint_view(*c.sharded, "layers.");
}

// A checkpoint of the other kind than the run's, seen by rank 0 (the directory is every rank's).
void refuse_the_other_kind(const TrainerCheckpoint& c) {
  std::string ddp_file = torch::checkpoint_path(c.config.checkpoint_dir);
  std::string zero_file = torch::zero_manifest_path(c.config.checkpoint_dir);
  bool sharded = c.sharded_kind();
  const std::string& other = sharded ? ddp_file : zero_file;
  std::uint8_t other_exists = c.comm.rank() == 0 && std::filesystem::exists(other) ? 1 : 0;
  broadcast(c.comm, &other_exists, 1, DType::kU8, 0);
  if (!other_exists) return;
  throw InvalidArgument({.rank = c.comm.rank(), .op = "braid-train --resume"},
                        fmt::format("{} holds a {} checkpoint ({}), and this run has --zero {}: resume it with {}, or "
                                    "use another --checkpoint-dir",
                                    c.config.checkpoint_dir, sharded ? "DDP (--zero 0)" : "sharded ZeRO (--zero 1, 2 or 3)",
                                    other, c.config.zero, sharded ? "--zero 0 at its world size" : "--zero 1, 2 or 3"));
}

}  // namespace

std::string TrainerCheckpoint::path() const {
  return sharded_kind() ? torch::zero_manifest_path(config.checkpoint_dir) : torch::checkpoint_path(config.checkpoint_dir);
}

void save_trainer_checkpoint(const TrainerCheckpoint& c, const torch::TrainingPosition& position) {
  torch::RunState state{.position = position};
  if (c.scaler) state.loss_scaler = c.scaler->state();
  if (c.sharded_kind()) {
    torch::save_zero_checkpoint(view_of(c), c.config.checkpoint_dir, state, fingerprint(c));
  } else {
    torch::save_checkpoint(c.comm, c.config.checkpoint_dir, *c.ddp, *c.optimizer, state, fingerprint(c));
  }
}

std::optional<torch::TrainingPosition> load_trainer_checkpoint(const TrainerCheckpoint& c) {
  std::optional<torch::RunState> state =
      c.sharded_kind() ? torch::load_zero_checkpoint(view_of(c), c.config.checkpoint_dir, fingerprint(c))
                       : torch::load_checkpoint(c.comm, c.config.checkpoint_dir, *c.ddp, *c.optimizer, fingerprint(c));
  if (!state) {
    refuse_the_other_kind(c);
    return std::nullopt;
  }
  // The fingerprint holds the precision and the loss-scale flag: only an fp16 run finds one.
  if (state->loss_scaler && c.scaler) c.scaler->restore(*state->loss_scaler);
  return state->position;
}

}  // namespace braid::train
