#include "braid/tools/braid_train/mesh_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/failure_agreement.h"
#include "braid/torch/zero_checkpoint.h"

namespace braid::train {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kGenerationLine = "generation ";

struct Manifest {
  std::string fingerprint;     // with its newline, as the run's fingerprint + "\n"
  std::int64_t generation = 0;  // 0: written before generations
};

// The manifest, or nullopt when there is none.
std::optional<Manifest> read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text(std::istreambuf_iterator<char>(in), {});
  Manifest m{.fingerprint = text};
  std::size_t line = text.rfind(fmt::format("\n{}", kGenerationLine));
  if (line == std::string::npos) return m;
  const char* digits = text.data() + line + 1 + kGenerationLine.size();
  std::int64_t g = 0;
  auto [end, ec] = std::from_chars(digits, text.data() + text.size(), g);
  if (ec != std::errc() || g < 1 || std::string_view(end, text.data() + text.size() - end) != "\n") return m;
  m.fingerprint = text.substr(0, line + 1);
  m.generation = g;
  return m;
}

// The generation a directory name "mesh-<g>" holds, or -1 for any other name.
std::int64_t generation_of(const std::string& name) {
  if (!name.starts_with("mesh-")) return -1;
  std::int64_t g = -1;
  auto [end, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), g);
  return ec == std::errc() && end == name.data() + name.size() ? g : -1;
}

// One more than any set in `dir`, committed or left by a killed save: a new save never writes
// into a set a manifest may name. World rank 0's view, broadcast.
std::int64_t next_generation(Communicator& world, const std::string& dir) {
  std::int64_t next = 1;
  if (world.rank() == 0) {
    std::error_code error;  // no directory yet: generation 1
    for (const fs::directory_entry& e : fs::directory_iterator(dir, error)) {
      next = std::max(next, generation_of(e.path().filename().string()) + 1);
    }
  }
  broadcast(world, &next, 1, DType::kI64, 0);
  return next;
}

// After the commit: every other set, the shards of the layout before generations and the
// temporary manifests of saves killed while writing theirs.
void remove_other_generations(const std::string& dir, std::int64_t keep) {
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, error)) {
    std::string name = e.path().filename().string();
    std::int64_t g = generation_of(name);
    bool stale = (g >= 0 && g != keep) || name.starts_with("mesh-pp") || name.starts_with("mesh.txt.tmp.");
    if (stale) fs::remove_all(e.path(), error);  // best effort: a leftover is harmless
  }
}

// Every rank's shard must be at the same position: otherwise the set is not one save's.
void check_same_position(const MeshCheckpoint& c, const torch::TrainingPosition& at) {
  std::int64_t mine[3] = {at.step, at.epoch, at.batch_in_epoch};
  std::vector<std::int64_t> all(3 * static_cast<std::size_t>(c.world.size()));
  allgather(c.world, mine, all.data(), 3, DType::kI64);
  for (int r = 1; r < c.world.size(); ++r) {
    if (std::equal(all.begin(), all.begin() + 3, all.begin() + 3 * r)) continue;
    throw Corrupt({.rank = c.world.rank(), .peer = r, .op = "braid-train --resume"},
                  fmt::format("the shards of the checkpoint in {} are not one save's: world rank 0's is at step {}, "
                              "rank {}'s at step {}",
                              c.dir, all[0], r, all[3 * static_cast<std::size_t>(r)]));
  }
}

// --zero 1 and 3: the view of the group's sharded ZeRO checkpoint; nullopt for --zero 0.
std::optional<torch::ZeroCheckpointView> zero_view(const MeshCheckpoint& c) {
  if (c.zero) return torch::checkpoint_view(*c.zero);
  if (!c.sharded) return std::nullopt;
  torch::ZeroCheckpointView view = torch::checkpoint_view(*c.sharded);
  // The stage module registers the layers under the names the sharded Sequential gives them
  // ("layer<i>"), plus the dropout streams: its buffers are the Sequential's and "rng_state".
  view.module = c.stage_module;
  return view;
}

}  // namespace

std::string MeshCheckpoint::manifest_path() const { return (fs::path(dir) / "mesh.txt").string(); }

std::string MeshCheckpoint::shard_dir(std::int64_t generation) const {
  if (generation == 0) return (fs::path(dir) / fmt::format("mesh-pp{}-tp{}", stage, tp_rank)).string();
  return (fs::path(dir) / fmt::format("mesh-{}", generation) / fmt::format("pp{}-tp{}", stage, tp_rank)).string();
}

void save_mesh_checkpoint(const MeshCheckpoint& c, const torch::TrainingPosition& position) {
  torch::RunState state{.position = position};
  if (c.scaler) state.loss_scaler = c.scaler->state();
  std::int64_t generation = next_generation(c.world, c.dir);
  std::exception_ptr failure;
  try {
    if (std::optional<torch::ZeroCheckpointView> view = zero_view(c)) {
      torch::save_zero_checkpoint(*view, c.shard_dir(generation), state, c.fingerprint);
    } else {
      torch::save_checkpoint(c.data_parallel, c.shard_dir(generation), *c.ddp, *c.optimizer, state, c.fingerprint);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  rethrow_first_failure(c.world, failure, "braid-train checkpoint");
  // Every shard of set `generation` is on disk: the manifest's rename commits it.
  failure = nullptr;
  try {
    if (c.world.rank() == 0) {
      write_file_atomically(c.manifest_path(), fmt::format("{}\n{}{}\n", c.fingerprint, kGenerationLine, generation));
      remove_other_generations(c.dir, generation);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  rethrow_first_failure(c.world, failure, "braid-train checkpoint");
}

std::optional<torch::TrainingPosition> load_mesh_checkpoint(const MeshCheckpoint& c) {
  std::optional<Manifest> manifest = read_manifest(c.manifest_path());
  if (!manifest) return std::nullopt;
  if (manifest->fingerprint != c.fingerprint + "\n") {
    throw InvalidArgument({.rank = c.world.rank(), .op = "braid-train --resume"},
                          fmt::format("the checkpoint in {} was saved by another run layout or configuration:\n  "
                                      "checkpoint: {}  this run:   {}",
                                      c.dir, manifest->fingerprint, c.fingerprint));
  }
  std::string shard = c.shard_dir(manifest->generation);
  std::optional<torch::RunState> state;
  std::exception_ptr failure;
  try {
    std::optional<torch::ZeroCheckpointView> view = zero_view(c);
    state = view ? torch::load_zero_checkpoint(*view, shard, c.fingerprint)
                 : torch::load_checkpoint(c.data_parallel, shard, *c.ddp, *c.optimizer, c.fingerprint);
    if (!state) {
      throw Corrupt({.rank = c.world.rank(), .op = "braid-train --resume"},
                    fmt::format("{} names a complete checkpoint, but {} is missing", c.manifest_path(), shard));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  rethrow_first_failure(c.world, failure, "braid-train --resume");
  check_same_position(c, state->position);
  if (state->loss_scaler && c.scaler) c.scaler->restore(*state->loss_scaler);
  return state->position;
}

}  // namespace braid::train
