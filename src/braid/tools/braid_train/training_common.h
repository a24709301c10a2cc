// What the data-parallel loop (trainer.cc) and the mesh one (mesh_trainer.cc)
// share: the loss, the optimizer and compression policy from the flags, evaluation, the replica
// check, and the end of a run (summary, JSON, exported model).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/compress/compression_policy.h"
#include "braid/tools/braid_train/models.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"
#include "braid/tools/braid_train/training_data.h"

namespace braid::train {

// Cross-entropy over the last dimension: per sample for the classifiers, per token for gpt.
// The mean trains; the sum adds up across evaluation slices and ranks.
::torch::Tensor loss_of(const ::torch::Tensor& logits, const ::torch::Tensor& target, bool sum = false);

std::unique_ptr<::torch::optim::Optimizer> make_optimizer(const TrainConfig& config, std::vector<::torch::Tensor> params);
compress::CompressionPolicy make_policy(const TrainConfig& config);
// LibTorch's intra-op threads and OpenBLAS's, per rank.
void set_threads(const TrainConfig& config);
// The model of the flags: --model, the GPT's size and dropout (`rng` draws its masks).
ModelSpec model_spec(const TrainConfig& config, std::int64_t vocab, torch::TensorParallelRng* rng);

// Prints on rank 0 only (flushed: progress must show under braid-run's prefixing pipe).
void say(const Communicator& comm, const std::string& line);

// Each rank evaluates a contiguous slice of the test set; the sums are allreduced over `comm`.
void evaluate(Communicator& comm, const TrainingData& data, TrainModel& model, EpochFigures& figures);
// The mean of `loss_sum` over `count` losses, summed over the ranks of `comm`.
double mean_over_ranks(Communicator& comm, double loss_sum, double count);

// Collective, once per step (the losses are summed over `comm`, so every rank decides alike);
// returns the sum.
// Throws InvalidArgument naming `step` when the loss is NaN or infinite, unless
// --allow-nonfinite-loss: the parameters are ruined by then, and training on would only waste
// the job and overwrite a good checkpoint with a ruined one.
double check_loss_is_finite(Communicator& comm, const TrainConfig& config, double loss, std::int64_t step);

std::uint32_t parameter_digest(TrainModel& model);
// Throws Mismatch naming the first rank whose parameters differ from rank 0's after `step`.
void check_replicas(Communicator& comm, TrainModel& model, std::int64_t step);

// The end of a run: digest and replica check, the summary table, --json and --export (rank 0).
void finish_run(Communicator& comm, const TrainConfig& config, RunSummary& summary, TrainModel& model,
                bool classification);

}  // namespace braid::train
