// braid-train --zero 3: the FullyShardedModule (torch/fully_sharded.h) over a braid-train model,
// and what its counters become in the run report.
//
// Units: every model is a Sequential (models.h), and every layer holding parameters is a unit
// with the parameterless layers before it (torch::units_of_layers_with_parameters): the MLP's
// three Linears (Flatten and the ReLUs ride along), the CNN's convolutions, BatchNorms and
// Linears, the GPT's embeddings, each transformer block, the final LayerNorm and the head.
#pragma once

#include <memory>

#include "braid/comm/communicator.h"
#include "braid/engine/grad_sync.h"
#include "braid/torch/fully_sharded.h"
#include "braid/tools/braid_train/models.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

// The options of the flags: --max-gathered-units as the cap, the codecs of --zero-pp (qwz, qgz)
// or else --precision's wire, hpz. The data-parallel trainer's and the mesh's stage 3 alike.
torch::FullyShardedOptions fully_sharded_options(const TrainConfig& config);
// The optimizer of the flags over the shards; fully_sharded_options.
std::unique_ptr<torch::FullyShardedModule> make_fully_sharded(Communicator& comm, const TrainConfig& config,
                                                              TrainModel& model);
// One step's traffic in the shape the report adds up (wire and dense wire bytes, the time waited).
GradSyncStats stage3_stats(const torch::FullyShardedStepStats& step);
RunSummary::Gathers gather_report(torch::FullyShardedModule& module);

}  // namespace braid::train
