// Checkpoints of a mesh run (mesh_trainer.h): one shard per (stage, TP rank), each written by
// its data-parallel group exactly as a data-parallel checkpoint (torch/checkpoint.h: parameters,
// buffers, optimizer state, residuals, a CRC32C per tensor), then <dir>/mesh.txt, the manifest,
// written by world rank 0 once every shard is on disk. With --zero 1 (a ZeroOptimizer over the
// group's DDP) each shard is the group's sharded ZeRO checkpoint instead (torch/zero_checkpoint.h:
// a file per data-parallel rank and a manifest per shard directory). An fp16 run's loss scale
// (the same on every rank) is saved in every shard and restored from the rank's own. With
// --zero 3 (a FullyShardedModule over the stage) each shard is likewise its group's sharded ZeRO
// checkpoint, of the module's units; its buffers are the stage module's (the layers' and the
// dropout streams' "rng_state", which lives outside the sharded layers), so the streams resume
// too. Its fingerprint has no world size (TrainConfig::zero_fingerprint): the dp size may
// change, each group's shard being re-cut by the ZeRO loader (engine::plan_reshard_by_name).
//
// Why generations: the shards are separate files written by separate ranks, so a save killed
// half-way leaves some shards new and others old. Every save therefore writes a new set,
// <dir>/mesh-<g>/pp<s>-tp<t>/, and only the manifest's rename (its lines: the fingerprint, then
// "generation <g>") makes set g the checkpoint; the older sets are removed after it. A manifest
// without a generation line is the layout before generations, <dir>/mesh-pp<s>-tp<t>/, and is
// still read.
//
// Loading reads the manifest on every rank (the same file, so every rank decides alike): none
// means no checkpoint; another fingerprint (a different --tp, --pp, world, model size...) is
// InvalidArgument on every rank naming both; then each group loads its shard, and a shard that
// is missing or damaged is refused on every rank (rethrow_first_failure), never a hang; shards
// at different training positions (a set that is not one save's) are Corrupt on every rank.
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

namespace braid::train {

struct MeshCheckpoint {
  Communicator& world;
  Communicator& data_parallel;     // the shard's group: its rank 0 writes
  std::string dir;
  int stage = 0, tp_rank = 0;
  torch::DistributedDataParallel* ddp = nullptr;   // --zero 0 and 1
  ::torch::optim::Optimizer* optimizer = nullptr;  // --zero 0
  std::string fingerprint;
  torch::ZeroOptimizer* zero = nullptr;   // --zero 1: the shard is a sharded ZeRO checkpoint
  torch::FullyShardedModule* sharded = nullptr;  // --zero 3: likewise, of the stage's units
  ::torch::nn::Module* stage_module = nullptr;   // --zero 3: whose buffers the shard holds
  parallel::DynamicLossScaler* scaler = nullptr;  // --precision fp16

  std::string manifest_path() const;
  // This rank's shard of set `generation` (0: the layout before generations).
  std::string shard_dir(std::int64_t generation) const;
};

// Collective over the world.
void save_mesh_checkpoint(const MeshCheckpoint& checkpoint, const torch::TrainingPosition& position);
// Collective over the world; nullopt when `dir` holds no mesh checkpoint.
std::optional<torch::TrainingPosition> load_mesh_checkpoint(const MeshCheckpoint& checkpoint);

}  // namespace braid::train
