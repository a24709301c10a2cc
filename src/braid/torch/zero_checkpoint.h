// Sharded checkpoints of ZeRO stages 1 and 2 (zero_optimizer.h) that load at any world size:
// DeepSpeed's "universal checkpoint" over braid's shard layout (engine/shard_layout.h,
// docs/zero.md "Sharded checkpoints").
//
// What is saved. Every rank writes its own shard file, <dir>/zero-<g>-rank<r>.pt (a LibTorch
// archive, a CRC32C per tensor: checked_archive.h): per bucket, its real parameter elements
// [begin, end) and the inner optimizer's state of that shard (zero_optimizer_state.h: SGD's
// momentum; Adam's and AdamW's moments and step). Rank 0 also writes the module's buffers,
// <dir>/zero-<g>-buffers.pt. Then rank 0 writes the manifest, <dir>/zero-checkpoint.json
// (zero_checkpoint_manifest.h: world size, every bucket's parameters by name and count, the
// optimizer, the fingerprint, the position, each file's name and size). Every file is written to
// a temporary name and renamed; the manifest's rename is the commit point: until it, the
// previous manifest and the files it names are the checkpoint. A save never overwrites a file
// the previous manifest names: g (the generation) is one more than any in the directory, and
// the older generations' files are removed only after the commit.
//
// Why it reshards: bucket plans depend on the parameters and the bucket cap, not on the world
// size, so a bucket's flat elements read the same at every world size and n shards are a cut of
// them; the state of an elementwise optimizer is cut the same way. Loading at m ranks plans the
// re-cut (engine::plan_reshard from the manifest's layout at n to this run's at m), so each rank
// reads only the old shard files overlapping its new ranges, fills its parameter shard and its
// optimizer state, and the flat parameters are allgathered: every rank holds the whole model.
// The bucket boundaries may differ too (another cap, --bucket-mb auto at another world size):
// the plan re-cuts across them, as long as the parameters (names, sizes, bucket order) agree.
//
// Directory: one visible to every rank (one host, or a shared file system), like checkpoint.h.
#pragma once

#include <optional>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/torch/checkpoint.h"
#include "braid/torch/zero_optimizer.h"

namespace braid::torch {

// <dir>/zero-checkpoint.json: whether it exists is whether `dir` holds a ZeRO checkpoint.
std::string zero_manifest_path(const std::string& dir);

// Collective over `comm` (the ZeroOptimizer's DDP communicator). `fingerprint` is the run's
// configuration as the caller sees it; for a checkpoint that is to load at another world size it
// must not contain the world size. Throws (on every rank) SystemError when a rank cannot write
// its file or rank 0 the manifest; the previous checkpoint is then still the one in `dir`.
void save_zero_checkpoint(Communicator& comm, const std::string& dir, ZeroOptimizer& zero,
                          const TrainingPosition& position, const std::string& fingerprint);

// Collective. Returns nullopt when rank 0 sees no manifest in `dir`. Loads a checkpoint saved at
// any world size into `zero` (parameters, inner optimizer state, buffers), so that the next
// step() continues it. Throws, on every rank and before anything of `zero` or the model is
// changed (everything is read into temporaries, and only written once every rank succeeded):
//   InvalidArgument: "a checkpoint of another model" naming the first parameter that differs;
//                    another fingerprint (both printed); another optimizer kind;
//   Corrupt:         a damaged or malformed manifest; a shard file that is missing, of another
//                    size than the manifest's, unreadable, or whose tensor fails its CRC32C
//                    (naming the file and the tensor).
// REQUIRES: before the first step().
std::optional<TrainingPosition> load_zero_checkpoint(Communicator& comm, const std::string& dir, ZeroOptimizer& zero,
                                                     const std::string& fingerprint);

}  // namespace braid::torch
