#include "braid/tools/braid_train/trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/codec_spec.h"
#include "braid/torch/checkpoint.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/trace/atomic_file.h"
#include "braid/trace/trace_recorder.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/models.h"
#include "braid/tools/braid_train/training_data.h"

namespace braid::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::unique_ptr<::torch::optim::Optimizer> make_optimizer(const TrainConfig& c, TrainModel& model) {
  if (c.optimizer == "adam") {
    return std::make_unique<::torch::optim::Adam>(model.parameters(), ::torch::optim::AdamOptions(c.learning_rate()));
  }
  return std::make_unique<::torch::optim::SGD>(model.parameters(),
                                               ::torch::optim::SGDOptions(c.learning_rate()).momentum(0.9));
}

compress::CompressionPolicy make_policy(const TrainConfig& c) {
  return compress::CompressionPolicy({.codec = compress::parse_codec_spec(c.compress),
                                      .min_elements = c.compress_min_elements,
                                      .warmup_steps = c.warmup_steps});
}

// Cross-entropy over the last dimension: per sample for the classifiers, per token for gpt.
// The mean trains; the sum adds up across evaluation slices and ranks.
::torch::Tensor loss_of(const ::torch::Tensor& logits, const ::torch::Tensor& target, bool sum = false) {
  namespace F = ::torch::nn::functional;
  ::torch::Tensor flat_logits = logits.reshape({-1, logits.size(-1)}), flat_target = target.reshape({-1});
  if (sum) return F::cross_entropy(flat_logits, flat_target, F::CrossEntropyFuncOptions().reduction(::torch::kSum));
  return F::cross_entropy(flat_logits, flat_target);
}

std::uint32_t parameter_digest(TrainModel& model) {
  std::uint32_t crc = 0;
  for (const ::torch::Tensor& p : model.parameters()) {
    ::torch::Tensor c = p.detach().contiguous();
    crc = crc32c(c.data_ptr(), static_cast<std::size_t>(c.nbytes()), crc);
  }
  return crc;
}

class Trainer {
 public:
  Trainer(Communicator& comm, const TrainConfig& config) : comm_(comm), config_(config) {}

  RunSummary run();

 private:
  void set_up();
  void train_epoch(std::int64_t epoch, std::int64_t first_batch, EpochFigures& figures);
  double train_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  void evaluate(EpochFigures& figures);
  void check_replicas();
  void save(const torch::TrainingPosition& position);
  void progress(std::int64_t epoch, std::int64_t batch, double loss);
  void finish_epoch(EpochFigures& figures, double loss_sum, double epoch_seconds);
  void report(RunSummary& summary);
  void say(const std::string& line) const;

  Communicator& comm_;
  const TrainConfig& config_;
  std::unique_ptr<TrainingData> data_;
  std::shared_ptr<TrainModel> model_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;
  std::unique_ptr<trace::TraceRecorder> trace_;
  std::unique_ptr<torch::DistributedDataParallel> ddp_;
  std::unique_ptr<torch::DistributedSampler> sampler_;
  std::int64_t rank_batch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  torch::TrainingPosition start_;
  bool resumed_ = false;
  Clock::time_point last_progress_ = Clock::now();
};

void Trainer::say(const std::string& line) const {
  if (comm_.rank() != 0) return;
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void Trainer::set_up() {
  ::torch::set_num_threads(config_.threads);
  set_blas_threads(config_.threads);
  data_ = load_training_data(config_);
  ::torch::manual_seed(config_.seed);  // every rank builds the same model; DDP still broadcasts rank 0's
  model_ = make_model({.name = config_.model, .vocab = data_->vocabulary(), .context = config_.context});
  optimizer_ = make_optimizer(config_, *model_);
  if (!config_.trace_dir.empty()) {
    trace_ = std::make_unique<trace::TraceRecorder>(trace::TraceOptions{.rank = comm_.rank(), .output_dir = config_.trace_dir});
  }
  ddp_ = std::make_unique<torch::DistributedDataParallel>(
      comm_, model_,
      torch::DdpOptions{.bucket_cap = config_.bucket_mb, .policy = make_policy(config_), .overlap = config_.overlap,
                        .trace = trace_.get()});
  sampler_ = std::make_unique<torch::DistributedSampler>(data_->train_size(), comm_.size(), comm_.rank(),
                                                         torch::SamplerOptions{.seed = config_.seed});
  rank_batch_ = config_.batch / comm_.size();
  steps_per_epoch_ = sampler_->shard_size() / rank_batch_;
  if (steps_per_epoch_ == 0) {
    throw InvalidArgument({.rank = comm_.rank(), .op = "braid-train"},
                          fmt::format("--batch {} is larger than the training set of {} samples: not one full step "
                                      "per epoch",
                                      config_.batch, data_->train_size()));
  }
  total_steps_ = config_.steps > 0 ? config_.steps : config_.epochs * steps_per_epoch_;
  if (config_.resume) {
    if (auto position = torch::load_checkpoint(comm_, config_.checkpoint_dir, *ddp_, *optimizer_,
                                               config_.fingerprint(comm_.size()))) {
      start_ = *position;
      step_ = position->step;
      resumed_ = true;
    }
  }
}

double Trainer::train_step(std::span<const std::int64_t> indices, EpochFigures& figures) {
  auto start = Clock::now();
  ddp_->zero_grad();
  std::int64_t micro = rank_batch_ / config_.accumulate;
  double loss_sum = 0;
  for (std::int64_t k = 0; k < config_.accumulate; ++k) {
    Batch batch = data_->train_batch(indices.subspan(static_cast<std::size_t>(k * micro), static_cast<std::size_t>(micro)));
    std::optional<NoSync> accumulate_only;
    if (k + 1 < config_.accumulate) accumulate_only.emplace(ddp_->grad_sync());
    ::torch::Tensor loss;
    {
      trace::ComputeScope forward(trace_.get(), "forward");
      loss = loss_of(model_->forward(batch.input), batch.target) /
             static_cast<double>(config_.accumulate);
    }
    {
      trace::ComputeScope backward(trace_.get(), "backward");
      loss.backward();
    }
    loss_sum += loss.item<double>();
  }
  GradSyncStats stats = ddp_->synchronize();
  {
    trace::ComputeScope update(trace_.get(), "optimizer");
    optimizer_->step();
  }
  if (trace_) trace_->step(static_cast<int>(step_ + 1));
  figures.step_seconds += seconds_since(start);
  figures.communication_seconds += stats.communication_seconds;
  figures.exposed_seconds += stats.exposed_seconds;
  figures.wire_bytes += stats.wire.wire_bytes;
  figures.dense_wire_bytes += stats.wire.dense_wire_bytes;
  figures.payload_bytes += stats.wire.payload_bytes;
  figures.fp32_bytes += stats.wire.elements * sizeof(float);
  return loss_sum;
}

void Trainer::check_replicas() {
  std::uint32_t mine = parameter_digest(*model_);
  std::vector<std::uint32_t> all(static_cast<std::size_t>(comm_.size()));
  allgather(comm_, &mine, all.data(), 1, DType::kI32);
  for (int r = 0; r < comm_.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] != all[0]) {
      throw Mismatch({.rank = comm_.rank(), .peer = r, .op = "braid-train --check-replicas", .seq = step_},
                     fmt::format("after step {} rank {}'s parameters (crc32c {:08x}) differ from rank 0's ({:08x})",
                                 step_, r, all[static_cast<std::size_t>(r)], all[0]));
    }
  }
}

void Trainer::save(const torch::TrainingPosition& position) {
  torch::save_checkpoint(comm_, config_.checkpoint_dir, *ddp_, *optimizer_, position, config_.fingerprint(comm_.size()));
}

void Trainer::progress(std::int64_t epoch, std::int64_t batch, double loss) {
  if (config_.quiet || seconds_since(last_progress_) < config_.log_interval) return;
  last_progress_ = Clock::now();
  say(fmt::format("  epoch {} step {}/{} (batch {}/{})  loss {:.4f} (rank 0)", epoch + 1, step_, total_steps_, batch,
                  steps_per_epoch_, loss));
}

void Trainer::train_epoch(std::int64_t epoch, std::int64_t first_batch, EpochFigures& figures) {
  std::vector<std::int64_t> shard = sampler_->shard(epoch);
  auto start = Clock::now();
  double loss_sum = 0;
  std::int64_t batch = first_batch;
  for (; batch < steps_per_epoch_ && step_ < total_steps_; ++batch) {
    std::span<const std::int64_t> indices(shard.data() + batch * rank_batch_, static_cast<std::size_t>(rank_batch_));
    double loss = train_step(indices, figures);
    loss_sum += loss;
    ++step_;
    ++figures.steps;
    if (config_.check_replicas) check_replicas();
    progress(epoch, batch + 1, loss);
    bool epoch_done = batch + 1 == steps_per_epoch_;
    if (!config_.checkpoint_dir.empty() &&
        ((config_.checkpoint_every > 0 && step_ % config_.checkpoint_every == 0) ||
         (config_.checkpoint_every == 0 && (epoch_done || step_ == total_steps_)))) {
      save(epoch_done ? torch::TrainingPosition{step_, epoch + 1, 0} : torch::TrainingPosition{step_, epoch, batch + 1});
    }
  }
  figures.samples = figures.steps * config_.batch;
  finish_epoch(figures, loss_sum, seconds_since(start));
}

void Trainer::finish_epoch(EpochFigures& figures, double loss_sum, double epoch_seconds) {
  double mean_loss[2] = {loss_sum, static_cast<double>(figures.steps)};
  allreduce(comm_, mean_loss, mean_loss, 2, DType::kF64, ReduceOp::kSum);
  figures.train_loss = mean_loss[1] > 0 ? mean_loss[0] / mean_loss[1] : 0;
  figures.seconds = epoch_seconds;
  figures.tokens_per_sample = data_->tokens_per_sample();
  evaluate(figures);
}

// Each rank evaluates a contiguous slice of the test set; the sums are allreduced.
void Trainer::evaluate(EpochFigures& figures) {
  ::torch::NoGradGuard no_grad;
  model_->eval();
  std::int64_t n = data_->test_size(), world = comm_.size(), rank = comm_.rank();
  std::int64_t begin = n * rank / world, end = n * (rank + 1) / world;
  double sums[3] = {0, 0, 0};  // loss, correct, predictions
  for (std::int64_t at = begin; at < end; at += 500) {
    Batch batch = data_->test_batch(at, std::min(end, at + 500));
    ::torch::Tensor logits = model_->forward(batch.input);
    sums[0] += loss_of(logits, batch.target, /*sum=*/true).item<double>();
    sums[1] += logits.argmax(-1).eq(batch.target).sum().item<double>();
    sums[2] += static_cast<double>(batch.target.numel());
  }
  model_->train();
  allreduce(comm_, sums, sums, 3, DType::kF64, ReduceOp::kSum);
  figures.test_loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  if (data_->classification()) figures.test_accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
}

void Trainer::report(RunSummary& summary) {
  summary.parameter_digest = parameter_digest(*model_);
  check_replicas();  // the summary promises identical replicas: prove it once, always
  say(summary_table(summary, data_->classification()));
  if (comm_.rank() != 0) return;
  if (!config_.json_path.empty()) trace::write_file_atomically(config_.json_path, to_json(summary, config_).dump(2) + "\n");
  if (!config_.export_path.empty()) ::torch::save(std::static_pointer_cast<::torch::nn::Module>(model_), config_.export_path);
}

RunSummary Trainer::run() {
  set_up();
  say(fmt::format("braid-train: {} on {} ranks x {} thread(s); {}; {} parameters; global batch {} ({} per rank{}); "
                  "{} steps per epoch; BLAS: {}",
                  config_.model, comm_.size(), config_.threads, data_->describe(), ddp_->parameter_count(),
                  config_.batch, rank_batch_,
                  config_.accumulate > 1 ? fmt::format(" in {} micro-batches", config_.accumulate) : "",
                  steps_per_epoch_, blas_description()));
  if (resumed_) say(fmt::format("resumed from {} at step {} (epoch {}, batch {})", torch::checkpoint_path(config_.checkpoint_dir),
                                start_.step, start_.epoch + 1, start_.batch_in_epoch));
  RunSummary summary{.model = config_.model, .world = comm_.size(), .threads = config_.threads,
                     .parameters = ddp_->parameter_count(), .compress = config_.compress, .overlap = config_.overlap,
                     .blas = blas_description(), .data = data_->describe(), .resumed = resumed_};
  for (std::int64_t epoch = start_.epoch; step_ < total_steps_; ++epoch) {
    EpochFigures figures{.epoch = epoch + 1};
    train_epoch(epoch, epoch == start_.epoch ? start_.batch_in_epoch : 0, figures);
    say(epoch_line(figures, data_->classification()));
    summary.epochs.push_back(figures);
  }
  summary.steps = step_;
  report(summary);
  return summary;
}

}  // namespace

RunSummary train(Communicator& comm, const TrainConfig& config) { return Trainer(comm, config).run(); }

}  // namespace braid::train
