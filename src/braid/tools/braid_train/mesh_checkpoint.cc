#include "braid/tools/braid_train/mesh_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/collectives/failure_agreement.h"
#include "braid/torch/zero_checkpoint.h"

namespace braid::train {
namespace {

// The manifest's content, or nullopt when there is none.
std::optional<std::string> read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string MeshCheckpoint::manifest_path() const { return (std::filesystem::path(dir) / "mesh.txt").string(); }

std::string MeshCheckpoint::shard_dir() const {
  return (std::filesystem::path(dir) / fmt::format("mesh-pp{}-tp{}", stage, tp_rank)).string();
}

void save_mesh_checkpoint(const MeshCheckpoint& c, const torch::TrainingPosition& position) {
  torch::RunState state{.position = position};
  if (c.scaler) state.loss_scaler = c.scaler->state();
  std::exception_ptr failure;
  try {
    if (c.zero) {
      torch::save_zero_checkpoint(torch::checkpoint_view(*c.zero), c.shard_dir(), state, c.fingerprint);
    } else {
      torch::save_checkpoint(c.data_parallel, c.shard_dir(), c.ddp, c.optimizer, state, c.fingerprint);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  rethrow_first_failure(c.world, failure, "braid-train checkpoint");
  if (c.world.rank() == 0) write_file_atomically(c.manifest_path(), c.fingerprint + "\n");
  c.world.barrier();
}

std::optional<torch::TrainingPosition> load_mesh_checkpoint(const MeshCheckpoint& c) {
  std::optional<std::string> manifest = read_manifest(c.manifest_path());
  if (!manifest) return std::nullopt;
  if (*manifest != c.fingerprint + "\n") {
    throw InvalidArgument({.rank = c.world.rank(), .op = "braid-train --resume"},
                          fmt::format("the checkpoint in {} was saved by another run layout or configuration:\n  "
                                      "checkpoint: {}  this run:   {}",
                                      c.dir, *manifest, c.fingerprint));
  }
  std::optional<torch::RunState> state;
  std::exception_ptr failure;
  try {
    state = c.zero ? torch::load_zero_checkpoint(torch::checkpoint_view(*c.zero), c.shard_dir(), c.fingerprint)
                   : torch::load_checkpoint(c.data_parallel, c.shard_dir(), c.ddp, c.optimizer, c.fingerprint);
    if (!state) {
      throw Corrupt({.rank = c.world.rank(), .op = "braid-train --resume"},
                    fmt::format("{} names a complete checkpoint, but {} is missing", c.manifest_path(), c.shard_dir()));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  rethrow_first_failure(c.world, failure, "braid-train --resume");
  if (state->loss_scaler && c.scaler) c.scaler->restore(*state->loss_scaler);
  return state->position;
}

}  // namespace braid::train
