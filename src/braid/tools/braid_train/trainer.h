// The training loop of braid-train: data-parallel SGD/Adam over a Communicator with
// braid::torch::DistributedDataParallel, a DistributedSampler, checkpoints, evaluation and the
// figures of every epoch.
//
// One optimizer step: each rank takes its next batch/world samples from its shard, splits them
// into --accumulate micro-batches (all but the last inside no_sync), runs forward and backward
// (the gradient buckets' allreduces start during backward when overlap is on), synchronises and
// steps the optimizer. An epoch is shard_size / (batch/world) steps: the last incomplete batch
// is dropped, so every step has the same global batch (as DataLoader's drop_last=True).
#pragma once

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

// Runs the whole job on this rank. Prints progress and the summary on rank 0, writes the JSON
// and the exported model when asked. Throws braid::Error on bad input or a failed peer.
RunSummary train(Communicator& comm, const TrainConfig& config);

}  // namespace braid::train
