// The training loop of --model moe-gpt: data parallelism over the world with expert
// parallelism inside it (--ep N: EP groups of N consecutive ranks, each MoE layer's experts
// spread over its group; dense parameters averaged over the world, expert parameters over the
// world / N replicas of their shard: torch/moe_data_parallel.h).
//
// One step: each rank takes its batch / world samples (DistributedSampler over the world, as
// the data-parallel trainer), forward (the MoE layers' all-to-alls over the EP group), loss =
// cross-entropy + the MoE layers' auxiliary losses, backward, MoeDataParallel::synchronize, the
// optimizer. The result does not depend on --ep (the tests compare --ep 2 with --ep 1).
// Reported besides the usual figures (moe_report.h): tokens dropped per step, the expert load
// histogram of each MoE layer, rank 0's all-to-all time per step. The final digest and --export
// cover the whole model as --ep 1 holds it (moe_gpt_model.h: a flat float32 tensor).
#pragma once

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

RunSummary train_moe_gpt(Communicator& world, const TrainConfig& config);

}  // namespace braid::train
