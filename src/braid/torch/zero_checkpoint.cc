#include "braid/torch/zero_checkpoint.h"

#include <fmt/format.h>

#include <charconv>
#include <exception>
#include <filesystem>

#include "braid/base/atomic_file.h"
#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/failure_agreement.h"
#include "braid/torch/zero_checkpoint_manifest.h"
#include "braid/torch/zero_optimizer_state.h"
#include "braid/torch/zero_shard_file.h"

namespace braid::torch {
namespace {

namespace fs = std::filesystem;

std::string shard_file_name(std::int64_t generation, int rank) { return fmt::format("zero-{}-rank{}.pt", generation, rank); }
std::string buffers_file_name(std::int64_t generation) { return fmt::format("zero-{}-buffers.pt", generation); }

// The generation in a ZeRO checkpoint file's name ("zero-<g>-..."; temporary files included),
// or -1 for any other file.
std::int64_t generation_of(const std::string& name) {
  if (!name.starts_with("zero-")) return -1;
  std::int64_t g = -1;
  auto [after, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), g);
  return ec == std::errc() && after != name.data() + name.size() && *after == '-' ? g : -1;
}

// One more than any generation in `dir`: the files of a new save never replace those of the
// committed checkpoint, nor a crashed save's leftovers. Rank 0's view, broadcast.
std::int64_t next_generation(Communicator& comm, const std::string& dir) {
  std::int64_t next = 1;
  if (comm.rank() == 0) {
    std::error_code error;  // no directory yet: generation 1
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
      next = std::max(next, generation_of(entry.path().filename().string()) + 1);
    }
  }
  broadcast(comm, &next, 1, DType::kI64, 0);
  return next;
}

// After the commit: every ZeRO file of another generation (older checkpoints, crashed saves),
// and the temporary manifests of saves killed while writing theirs.
void remove_other_generations(const std::string& dir, std::int64_t keep) {
  std::error_code error;
  std::string killed_manifest = fs::path(zero_manifest_path(dir)).filename().string() + ".tmp.";
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    std::int64_t g = generation_of(name);
    bool stale = (g >= 0 && g != keep) || name.starts_with(killed_manifest);
    if (stale) fs::remove(entry.path(), error);  // best effort: a leftover is harmless
  }
}

// Runs `write` and agrees on the outcome: every rank throws if one failed.
template <typename Write>
void agreed(Communicator& comm, const std::string& op, Write&& write) {
  std::exception_ptr failure;
  try {
    write();
  } catch (const c10::Error& e) {
    failure = std::make_exception_ptr(SystemError({.rank = comm.rank(), .op = op}, e.what_without_backtrace()));
  } catch (...) {
    failure = std::current_exception();
  }
  rethrow_first_failure(comm, failure, op);
}

}  // namespace

std::string zero_manifest_path(const std::string& dir) { return (fs::path(dir) / "zero-checkpoint.json").string(); }

void save_zero_checkpoint(const ZeroCheckpointView& view, const std::string& dir, const RunState& state,
                          const std::string& fingerprint) {
  const std::string op = "save_zero_checkpoint";
  Communicator& comm = *view.comm;
  std::string kind = optimizer_kind(*view.optimizer);
  std::int64_t generation = next_generation(comm, dir);
  std::int64_t bytes[2] = {0, 0};  // this rank's shard file, rank 0's buffers file
  agreed(comm, op, [&] {
    fs::create_directories(dir);
    std::string shard = encode_shard_file(view, kind, generation);
    write_file_atomically((fs::path(dir) / shard_file_name(generation, comm.rank())).string(), shard);
    bytes[0] = static_cast<std::int64_t>(shard.size());
    if (comm.rank() != 0) return;
    std::string buffers = encode_buffers_file(*view.module, view.buffer_prefix);
    write_file_atomically((fs::path(dir) / buffers_file_name(generation)).string(), buffers);
    bytes[1] = static_cast<std::int64_t>(buffers.size());
  });
  std::vector<std::int64_t> sizes(2 * static_cast<std::size_t>(comm.size()));
  allgather(comm, bytes, sizes.data(), 2, DType::kI64);
  // Every shard is on disk: the manifest's rename commits the checkpoint.
  agreed(comm, op, [&] {
    if (comm.rank() != 0) return;
    const TrainingPosition& at = state.position;
    ZeroManifest manifest{.generation = generation, .world_size = comm.size(), .optimizer = kind,
                          .sharding = view.sharding, .alignment_bytes = static_cast<std::int64_t>(view.alignment_bytes),
                          .fingerprint = fingerprint, .step = at.step, .epoch = at.epoch,
                          .batch_in_epoch = at.batch_in_epoch, .buckets = view.buffers,
                          .buffers = {.file = buffers_file_name(generation), .bytes = sizes[1]},
                          .loss_scaler = state.loss_scaler};
    for (int r = 0; r < comm.size(); ++r) {
      manifest.shards.push_back({.file = shard_file_name(generation, r), .bytes = sizes[2 * static_cast<std::size_t>(r)]});
    }
    write_file_atomically(zero_manifest_path(dir), encode_manifest(manifest));
    remove_other_generations(dir, generation);
  });
}

void save_zero_checkpoint(Communicator& comm, const std::string& dir, ZeroOptimizer& zero,
                          const TrainingPosition& position, const std::string& fingerprint) {
  BRAID_CHECK(&comm == &zero.ddp().communicator(), InvalidArgument,
              (ErrorContext{.rank = comm.rank(), .op = "save_zero_checkpoint"}), "the communicator is not the ZeroOptimizer's");
  save_zero_checkpoint(checkpoint_view(zero), dir, {.position = position}, fingerprint);
}

namespace {

// Everything a load writes, read and checked before any of it is.
struct StagedLoad {
  std::vector<SavedShard> shards;  // per flat buffer: this rank's new shard, the view's shard length
  std::vector<std::pair<::torch::Tensor, ::torch::Tensor>> buffers;
  RunState state;
};

void check_manifest(const ZeroManifest& m, const ZeroCheckpointView& view, const std::string& kind,
                    const std::string& fingerprint, const ErrorContext& context, const std::string& path) {
  if (auto difference = first_parameter_difference(m.buckets, view.buffers)) {
    throw InvalidArgument(context, fmt::format("{} is a checkpoint of another model: {}", path, *difference));
  }
  if (m.fingerprint != fingerprint) {
    throw InvalidArgument(context, fmt::format("{} was written by another configuration:\n  checkpoint: {}\n  this "
                                               "run:   {}\nresume with the same settings, or use another "
                                               "--checkpoint-dir",
                                               path, m.fingerprint, fingerprint));
  }
  if (m.optimizer != kind) {
    throw InvalidArgument(context, fmt::format("{} holds the state of a {} optimizer, this run steps with {}", path,
                                               m.optimizer, kind));
  }
}

// Fills `into` (this rank's new shard of a buffer) from the saved shards through the copies of
// the resharding plan. Every copy's source must agree on whether there is state and its step.
void fill_shard(SavedShard& into, const std::vector<engine::ShardCopy>& copies,
                const std::map<int, std::map<int, SavedShard>>& sources, std::size_t state_tensors,
                const ErrorContext& context, int buffer) {
  bool first = true;
  for (const engine::ShardCopy& copy : copies) {
    const SavedShard& from = sources.at(copy.source_rank).at(copy.source_buffer);
    if (first) {
      into.state = {.present = from.state.present, .step = from.state.step};
      for (std::size_t i = 0; from.state.present && i < state_tensors; ++i) {
        into.state.tensors.push_back(::torch::zeros_like(into.param));
      }
      first = false;
    } else if (from.state.present != into.state.present || from.state.step != into.state.step) {
      throw Corrupt(context, fmt::format("flat buffer {}: the saved shards disagree on the optimizer state (rank {}'s "
                                         "shard has state {} at step {}, another {} at step {})",
                                         buffer, copy.source_rank, from.state.present, from.state.step,
                                         into.state.present, into.state.step));
    }
    auto move = [&](::torch::Tensor& to, const ::torch::Tensor& saved) {
      to.narrow(0, copy.target_offset, copy.length).copy_(saved.narrow(0, copy.source_offset, copy.length));
    };
    move(into.param, from.param);
    for (std::size_t i = 0; i < into.state.tensors.size(); ++i) move(into.state.tensors[i], from.state.tensors[i]);
  }
}

StagedLoad stage(const std::string& dir, const ZeroManifest& m, const ZeroCheckpointView& view, const std::string& kind,
                 const ErrorContext& context) {
  Communicator& comm = *view.comm;
  engine::ShardLayout from = manifest_layout(m.buckets, m.world_size, static_cast<std::size_t>(m.alignment_bytes));
  engine::ShardLayout to = view.layout();
  // By name: the checkpoint may be of another stage, whose buffers list the parameters in
  // another order (buckets in reverse registration order, units in module order).
  engine::ReshardPlan plan = engine::plan_reshard_by_name(from, to);
  // Only the old shards that overlap this rank's new ranges are read.
  std::map<int, std::map<int, SavedShard>> sources;
  for (const auto& per_rank : plan.copies) {
    for (const engine::ShardCopy& copy : per_rank[static_cast<std::size_t>(comm.rank())]) {
      int q = copy.source_rank;
      if (sources.contains(q)) continue;
      const ManifestFile& file = m.shards[static_cast<std::size_t>(q)];
      sources[q] = read_shard_file((fs::path(dir) / file.file).string(), file.bytes, from, q, m.generation, kind, context);
    }
  }
  StagedLoad staged{.state = {.position = {.step = m.step, .epoch = m.epoch, .batch_in_epoch = m.batch_in_epoch},
                              .loss_scaler = m.loss_scaler}};
  std::size_t state_tensors = state_tensor_names(kind).size();
  for (std::size_t b = 0; b < to.buffers.size(); ++b) {
    // Zeros where no copy writes: the padding, and stage 3's alignment gaps and tail.
    SavedShard shard{.param = ::torch::zeros_like(view.shards[b])};
    fill_shard(shard, plan.copies[b][static_cast<std::size_t>(comm.rank())], sources, state_tensors, context,
               static_cast<int>(b));
    staged.shards.push_back(std::move(shard));
  }
  staged.buffers = read_buffers_file((fs::path(dir) / m.buffers.file).string(), m.buffers.bytes, *view.module,
                                     view.buffer_prefix, context);
  return staged;
}

// The only writes of a load, once every rank has staged its part: the shards, their optimizer
// state and the buffers; then the view's owner makes its model whole again (ZeroOptimizer
// allgathers its flat parameters, as a step ends; with qwZ the shards written are the exact
// masters and the flat parameters get their dequantised values, as in the run that saved them).
void commit(const ZeroCheckpointView& view, const std::string& kind, const StagedLoad& staged) {
  ::torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < view.shards.size(); ++b) {
    const SavedShard& shard = staged.shards[b];
    if (shard.param.numel() == 0) continue;
    view.shards[b].copy_(shard.param);
    set_shard_state(*view.optimizer, kind, view.shards[b], shard.state);
  }
  for (const auto& [buffer, saved] : staged.buffers) buffer.copy_(saved);
  if (view.after_load) view.after_load();
}

}  // namespace

std::optional<RunState> load_zero_checkpoint(const ZeroCheckpointView& view, const std::string& dir,
                                                 const std::string& fingerprint) {
  Communicator& comm = *view.comm;
  ErrorContext context{.rank = comm.rank(), .op = "load_zero_checkpoint"};
  std::string path = zero_manifest_path(dir);
  bool exists = fs::exists(path);
  std::uint8_t rank0_has = exists ? 1 : 0;  // rank 0 commits: without its manifest nobody resumes
  broadcast(comm, &rank0_has, 1, DType::kU8, 0);
  if (!rank0_has) return std::nullopt;

  std::string kind = optimizer_kind(*view.optimizer);
  StagedLoad staged;
  std::exception_ptr failure;
  try {
    if (!exists) {
      throw InvalidArgument(context, fmt::format("{} exists on rank 0 but not here: the checkpoint directory must be "
                                                 "shared by every rank",
                                                 path));
    }
    ZeroManifest manifest = decode_manifest(read_whole_file(path), context, path);
    check_manifest(manifest, view, kind, fingerprint, context, path);
    staged = stage(dir, manifest, view, kind, context);
  } catch (...) {
    failure = std::current_exception();
  }
  // Nothing is written until every rank has its part: a failure anywhere leaves every model as it was.
  rethrow_first_failure(comm, failure, "load_zero_checkpoint");
  commit(view, kind, staged);
  return staged.state;
}

std::optional<TrainingPosition> load_zero_checkpoint(Communicator& comm, const std::string& dir, ZeroOptimizer& zero,
                                                     const std::string& fingerprint) {
  BRAID_CHECK(&comm == &zero.ddp().communicator(), InvalidArgument,
              (ErrorContext{.rank = comm.rank(), .op = "load_zero_checkpoint"}), "the communicator is not the ZeroOptimizer's");
  std::optional<RunState> state = load_zero_checkpoint(checkpoint_view(zero), dir, fingerprint);
  if (!state) return std::nullopt;
  return state->position;
}

}  // namespace braid::torch
