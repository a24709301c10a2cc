// Sharded checkpoints of ZeRO stages 1 and 2 (zero_optimizer.h) and 3 (fully_sharded.h) that load
// at any world size and into any stage: DeepSpeed's "universal checkpoint" over braid's shard
// layout (engine/shard_layout.h, zero_checkpoint_view.h, docs/zero.md "Sharded checkpoints").
//
// What is saved. Every rank writes its own shard file, <dir>/zero-<g>-rank<r>.pt (a LibTorch
// archive, a CRC32C per tensor: checked_archive.h): per flat buffer (a bucket of stages 1-2, a
// unit of stage 3), its real parameter elements [begin, end) and the inner optimizer's state of that shard (zero_optimizer_state.h: SGD's
// momentum; Adam's and AdamW's moments and step). Rank 0 also writes the module's buffers,
// <dir>/zero-<g>-buffers.pt. Then rank 0 writes the manifest, <dir>/zero-checkpoint.json
// (zero_checkpoint_manifest.h: world size, every buffer's parameters by name and count, their
// alignment, the optimizer, the fingerprint, the position, fp16's loss scale, each file's name
// and size). Every file is written to
// a temporary name and renamed; the manifest's rename is the commit point: until it, the
// previous manifest and the files it names are the checkpoint. A save never overwrites a file
// the previous manifest names: g (the generation) is one more than any in the directory, and
// the older generations' files are removed only after the commit.
//
// Why it reshards: bucket plans depend on the parameters and the bucket cap, not on the world
// size, so a bucket's flat elements read the same at every world size and n shards are a cut of
// them; the state of an elementwise optimizer is cut the same way. Loading at m ranks plans the
// re-cut (from the manifest's layout at n to this run's at m), so each rank reads only the old
// shard files overlapping its new ranges, fills its parameter shard and its optimizer state, and
// (stages 1-2) the flat parameters are allgathered: every rank holds the whole model.
// The bucket boundaries may differ too (another cap, --bucket-mb auto at another world size),
// and so may the stage: stage 3's flat buffers are its units, each parameter at a multiple of 64
// bytes; the manifest records the alignment, and the plan re-cuts by parameter name
// (engine::plan_reshard_by_name), so a stage-1/2 checkpoint loads into stage 3 and back, as long
// as the parameters (names, sizes) agree. Stage 3 keeps only its shards, so a load into it
// gathers nothing: each unit is gathered from its new shard at its next forward.
//
// Directory: one visible to every rank (one host, or a shared file system), like checkpoint.h.
#pragma once

#include <optional>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/parallel/loss_scaler.h"
#include "braid/torch/checkpoint.h"
#include "braid/torch/zero_checkpoint_view.h"
#include "braid/torch/zero_optimizer.h"

namespace braid::torch {

// <dir>/zero-checkpoint.json: whether it exists is whether `dir` holds a ZeRO checkpoint.
std::string zero_manifest_path(const std::string& dir);

// Collective over the view's communicator. `fingerprint` is the run's configuration as the
// caller sees it; for a checkpoint that is to load at another world size it must not contain the
// world size. Throws (on every rank) SystemError when a rank cannot write its file or rank 0 the
// manifest; the previous checkpoint is then still the one in `dir`. InvalidArgument for an
// optimizer other than SGD, Adam, AdamW.
void save_zero_checkpoint(const ZeroCheckpointView& view, const std::string& dir, const RunState& state,
                          const std::string& fingerprint);

// Collective. Returns nullopt when rank 0 sees no manifest in `dir`. Loads a checkpoint saved at
// any world size, by any stage, into the view (parameter shards, inner optimizer state,
// buffers), so that the next step continues it. Throws, on every rank and before anything of
// the model or its optimizer is changed (everything is read into temporaries, and only written
// once every rank succeeded):
//   InvalidArgument: "a checkpoint of another model" naming the first parameter that differs
//                    (by name: order and buffer boundaries do not count); another fingerprint
//                    (both printed); another optimizer kind;
//   Corrupt:         a damaged or malformed manifest; a shard file that is missing, of another
//                    size than the manifest's, unreadable, or whose tensor fails its CRC32C
//                    (naming the file and the tensor).
// REQUIRES: before the first step (stage 3: outside forward and backward, no FullParameters).
std::optional<RunState> load_zero_checkpoint(const ZeroCheckpointView& view, const std::string& dir,
                                                 const std::string& fingerprint);

// Stages 1-2 over `comm` (the ZeroOptimizer's DDP communicator: InvalidArgument otherwise),
// without a loss scale: the forms above over checkpoint_view(zero).
void save_zero_checkpoint(Communicator& comm, const std::string& dir, ZeroOptimizer& zero,
                          const TrainingPosition& position, const std::string& fingerprint);
std::optional<TrainingPosition> load_zero_checkpoint(Communicator& comm, const std::string& dir, ZeroOptimizer& zero,
                                                     const std::string& fingerprint);

}  // namespace braid::torch
