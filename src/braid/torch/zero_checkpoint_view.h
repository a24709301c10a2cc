// What a sharded checkpoint (zero_checkpoint.h) reads and writes of a ZeRO model, whichever
// stage shards it: the flat buffers and their parameters, this rank's shard of each (the inner
// optimizer's parameter), the optimizer that holds the shards' state, the module's buffers, and
// what must happen once every rank holds its new shards. ZeroOptimizer (stages 1-2: a buffer per
// gradient bucket, parameters contiguous) and FullyShardedModule (stage 3: a buffer per unit,
// each parameter at a multiple of 64 bytes) each have an adapter; the save, the load and the
// resharding between any two views of the same parameters are one code (zero_checkpoint.cc).
//
// Why one code serves both: every buffer is laid out by engine::plan_shard_layout from its
// parameters and an alignment, and cut into n equal shards, rank r's starting at element r S;
// a shard file holds, per buffer, this rank's elements [min(E, r S), min(E, (r+1) S)) (E the
// buffer's used length) and the optimizer state over them. A checkpoint's manifest records the
// buffers, the alignment and the world size, so the loader rebuilds the saved layout and
// engine::plan_reshard_by_name re-cuts it into this view's, matching parameters by name: a
// checkpoint of stage 1 or 2 loads into stage 3 and back, at any world size.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/engine/shard_layout.h"
#include "braid/torch/fully_sharded.h"
#include "braid/torch/zero_checkpoint_manifest.h"
#include "braid/torch/zero_optimizer.h"

namespace braid::torch {

struct ZeroCheckpointView {
  Communicator* comm = nullptr;
  std::string sharding;                 // "buckets" or "units": recorded, not a condition of loading
  std::vector<ManifestBucket> buffers;  // each flat buffer's parameters, named as the checkpoint records them
  std::size_t alignment_bytes = sizeof(float);
  // Per flat buffer: the inner optimizer's parameter over this rank's shard, from element r S of
  // the buffer. ZeroOptimizer's holds the real elements only (none for an all-padding shard),
  // FullyShardedModule's all S (its padding zero, and kept zero by a load).
  std::vector<::torch::Tensor> shards;
  ::torch::optim::Optimizer* optimizer = nullptr;
  ::torch::nn::Module* module = nullptr;  // its buffers: saved by rank 0, loaded by every rank
  std::string buffer_prefix;              // before each buffer's name in the file
  std::function<void()> after_load;       // every rank has written its shards

  // The buffers at this communicator's size, as the manifest's reader will rebuild them.
  engine::ShardLayout layout() const;
};

// Stages 1-2: the buffers are the DDP's gradient buckets; a load regathers the flat parameters.
ZeroCheckpointView checkpoint_view(ZeroOptimizer& zero);

// Stage 3: the buffers are the units. `name_prefix` goes before every parameter and buffer name,
// so that they read as in the model the Sequential belongs to (braid-train's TrainModel registers
// it as "layers": "layers." makes a stage-3 checkpoint's names those of a stage-1/2 one over the
// whole model). A load leaves every unit free, hpZ's host copies stale.
ZeroCheckpointView checkpoint_view(FullyShardedModule& module, const std::string& name_prefix = "");

}  // namespace braid::torch
