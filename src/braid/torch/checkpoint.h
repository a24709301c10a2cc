// Training checkpoints: everything needed to continue a data-parallel run as if it had never
// stopped — the model, the optimizer's state, GradSync's step, bucket order and every rank's
// error-feedback residuals, the position in the data (epoch and batch), and an fp16 run's loss
// scale.
//
// One file, <dir>/checkpoint.pt (a LibTorch archive), written by rank 0 only: the residuals of
// the other ranks are gathered to it first, since they differ per rank. It is written to a
// temporary file and renamed, so a crash mid-save leaves the previous checkpoint intact.
// Every rank loads the same file (the directory must be visible to every rank, as on one host
// or a shared file system) and takes its own residuals from it. Every tensor is stored with
// the CRC32C of its bytes, since LibTorch's reader checks none.
//
// A checkpoint records a fingerprint of the run's configuration (model, world size, batch,
// optimizer, compression...): resuming under another one is refused with both fingerprints,
// because the sampler's shards and the residuals would no longer mean the same thing.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/parallel/loss_scaler.h"
#include "braid/torch/distributed_data_parallel.h"

namespace braid::torch {

struct TrainingPosition {
  std::int64_t step = 0;            // optimizer steps taken
  std::int64_t epoch = 0;           // the epoch in progress
  std::int64_t batch_in_epoch = 0;  // batches of that epoch already trained on
  bool operator==(const TrainingPosition&) const = default;
};

// What a checkpoint keeps of the run beside the model: the position in the data, and the loss
// scale of an fp16 run (its scale and counters move with the overflows: a resumed run that
// started again from the initial scale would not continue the one that saved it).
struct RunState {
  TrainingPosition position;
  std::optional<parallel::DynamicLossScaler::State> loss_scaler;
};

std::string checkpoint_path(const std::string& dir);

// Collective. Throws (on every rank) SystemError when rank 0 cannot write the file.
void save_checkpoint(Communicator& comm, const std::string& dir, DistributedDataParallel& ddp,
                     ::torch::optim::Optimizer& optimizer, const RunState& state, const std::string& fingerprint);

// Collective. Returns nullopt when there is no checkpoint in `dir` yet. Throws InvalidArgument
// for a checkpoint of another configuration or world size, Corrupt for an unreadable or damaged
// one: every tensor's CRC32C is checked as it is read (checkpoint_checksums.h), and a mismatch
// names the file and the tensor, on every rank. Must run before the first training step
// (GradSync::restore).
std::optional<RunState> load_checkpoint(Communicator& comm, const std::string& dir, DistributedDataParallel& ddp,
                                        ::torch::optim::Optimizer& optimizer, const std::string& fingerprint);

}  // namespace braid::torch
