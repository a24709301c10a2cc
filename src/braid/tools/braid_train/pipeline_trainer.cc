#include "braid/tools/braid_train/pipeline_trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <numeric>
#include <optional>
#include <span>
#include <utility>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/parallel/layer_partition.h"
#include "braid/parallel/pipeline_runtime.h"
#include "braid/parallel/pipeline_schedule.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/torch/sequential_stage.h"
#include "braid/torch/tensor_dtype.h"
#include "braid/trace/trace_recorder.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/training_common.h"

namespace braid::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Parameter counts per layer (+1, so that a parameter-free layer still weighs something and
// every piece gets work to do).
std::vector<std::int64_t> layer_weights(::torch::nn::Sequential& layers) {
  std::vector<std::int64_t> weights;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    std::int64_t count = 1;
    for (const ::torch::Tensor& p : layers[i]->parameters()) count += p.numel();
    weights.push_back(count);
  }
  return weights;
}

// The stage's pieces as one module, so DistributedDataParallel can average its gradients.
std::shared_ptr<::torch::nn::Module> stage_module(::torch::nn::Sequential& layers, const std::vector<int>& owned) {
  auto holder = std::make_shared<::torch::nn::Module>("PipelineStage");
  for (int i : owned) holder->register_module("layer" + std::to_string(i), layers[static_cast<std::size_t>(i)]);
  return holder;
}

class PipelineTrainer {
 public:
  PipelineTrainer(Communicator& world, const TrainConfig& config) : world_(world), config_(config) {}
  RunSummary run();

 private:
  void set_up();
  void train_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  void share_model();

  Communicator& world_;
  const TrainConfig& config_;
  int stage_ = 0, replica_ = 0, replicas_ = 1;
  std::optional<Communicator> pipe_, replicas_group_;
  std::unique_ptr<TrainingData> data_;
  std::shared_ptr<TrainModel> model_;
  parallel::LayerPartition partition_;
  std::unique_ptr<torch::SequentialStage> stage_model_;
  std::unique_ptr<torch::DistributedDataParallel> ddp_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;
  std::unique_ptr<trace::TraceRecorder> trace_;
  std::unique_ptr<parallel::PipelineRuntime> runtime_;
  std::unique_ptr<torch::DistributedSampler> sampler_;
  Batch current_;
  std::int64_t replica_batch_ = 0, micro_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  double epoch_loss_sum_ = 0;  // last stages' losses of this epoch's steps
};

void PipelineTrainer::set_up() {
  set_threads(config_);
  int pp = config_.pp;
  stage_ = world_.rank() % pp;
  replica_ = world_.rank() / pp;
  replicas_ = world_.size() / pp;
  pipe_ = world_.split(replica_, stage_);
  replicas_group_ = world_.split(stage_, replica_);
  data_ = load_training_data(config_);
  ::torch::manual_seed(config_.seed);
  model_ = make_model({.name = config_.model, .vocab = data_->vocabulary(), .context = config_.context});
  parallel::ParsedKind kind = parallel::parse_schedule_kind(config_.schedule);
  parallel::Schedule schedule = parallel::make_schedule(
      {.kind = kind.kind, .stages = pp, .microbatches = config_.microbatches, .chunks = kind.chunks});
  ::torch::nn::Sequential layers = model_->layers();
  partition_ = parallel::balanced_layer_partition(layer_weights(layers), pp, kind.chunks);
  sampler_ = std::make_unique<torch::DistributedSampler>(data_->train_size(), replicas_, replica_,
                                                         torch::SamplerOptions{.seed = config_.seed});
  replica_batch_ = config_.batch / replicas_;
  micro_ = replica_batch_ / config_.microbatches;
  steps_per_epoch_ = sampler_->shard_size() / replica_batch_;
  if (steps_per_epoch_ == 0) {
    throw InvalidArgument({.rank = world_.rank(), .op = "braid-train"},
                          fmt::format("--batch {} is larger than the training set of {} samples", config_.batch,
                                      data_->train_size()));
  }
  total_steps_ = config_.steps > 0 ? config_.steps : config_.epochs * steps_per_epoch_;
  std::vector<std::int64_t> example(static_cast<std::size_t>(micro_));
  std::iota(example.begin(), example.end(), std::int64_t{0});
  stage_model_ = std::make_unique<torch::SequentialStage>(
      layers, torch::SequentialStageOptions{
                  .stage = stage_,
                  .partition = partition_,
                  .example_input = data_->train_batch(example).input,
                  .input = [this](int mb) { return current_.input.narrow(0, mb * micro_, micro_); },
                  .loss = [this](int mb, const ::torch::Tensor& output) {
                    return loss_of(output, current_.target.narrow(0, mb * micro_, micro_)) /
                           static_cast<double>(config_.microbatches);
                  }});
  if (replicas_ > 1) {
    ddp_ = std::make_unique<torch::DistributedDataParallel>(
        *replicas_group_, stage_module(layers, stage_model_->layers()),
        torch::DdpOptions{.bucket_cap = config_.bucket_mb, .policy = make_policy(config_), .overlap = false});
  }
  optimizer_ = make_optimizer(config_, stage_model_->parameters());
  if (!config_.trace_dir.empty()) {
    trace_ = std::make_unique<trace::TraceRecorder>(trace::TraceOptions{.rank = world_.rank(), .output_dir = config_.trace_dir});
  }
  runtime_ = std::make_unique<parallel::PipelineRuntime>(*pipe_, schedule, *stage_model_,
                                                         parallel::PipelineRuntimeOptions{.trace = trace_.get()});
}

void PipelineTrainer::train_step(std::span<const std::int64_t> indices, EpochFigures& figures) {
  auto start = Clock::now();
  current_ = data_->train_batch(indices);
  for (::torch::Tensor& p : stage_model_->parameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
  parallel::StepReport report = runtime_->run_step();
  figures.communication_seconds += report.wait_seconds;  // pipeline bubble and transfers
  figures.exposed_seconds += report.wait_seconds;
  if (ddp_) {
    GradSyncStats stats = ddp_->synchronize();
    figures.communication_seconds += stats.communication_seconds;
    figures.exposed_seconds += stats.exposed_seconds;
    figures.wire_bytes += stats.wire.wire_bytes;
    figures.payload_bytes += stats.wire.payload_bytes;
    figures.fp32_bytes += stats.wire.elements * sizeof(float);
  }
  double loss = stage_model_->take_loss_sum();  // this step's, on last stages (0 elsewhere)
  epoch_loss_sum_ += loss;
  check_loss_is_finite(world_, config_, loss, step_ + 1);
  optimizer_->step();
  if (trace_) trace_->step(static_cast<int>(step_ + 1));
  figures.step_seconds += seconds_since(start);
}

// Every stage's trained layers (parameters and buffers) to every rank of its pipeline.
void PipelineTrainer::share_model() {
  ::torch::NoGradGuard no_grad;
  ::torch::nn::Sequential layers = model_->layers();
  for (std::size_t vs = 0; vs < partition_.pieces.size(); ++vs) {
    int owner = static_cast<int>(vs) % partition_.stages;
    for (int i = partition_.pieces[vs].begin; i < partition_.pieces[vs].end; ++i) {
      std::vector<::torch::Tensor> tensors = layers[static_cast<std::size_t>(i)]->parameters();
      for (const ::torch::Tensor& b : layers[static_cast<std::size_t>(i)]->buffers()) tensors.push_back(b);
      for (::torch::Tensor& t : tensors) {
        broadcast(*pipe_, t.data_ptr(), t.numel(), torch::braid_dtype(t, "braid-train --pp"), owner);
      }
    }
  }
}

RunSummary PipelineTrainer::run() {
  set_up();
  say(world_, fmt::format("braid-train: {} on {} ranks x {} thread(s): {} pipeline(s) of {} stages, schedule {}, {} "
                          "micro-batches of {}; {}; BLAS: {}",
                          config_.model, world_.size(), config_.threads, replicas_, config_.pp, config_.schedule,
                          config_.microbatches, micro_, data_->describe(), blas_description()));
  RunSummary summary{.model = config_.model, .world = world_.size(), .threads = config_.threads,
                     .compress = config_.compress, .overlap = false, .blas = blas_description(),
                     .data = data_->describe()};
  for (const ::torch::Tensor& p : model_->parameters()) summary.parameters += p.numel();
  for (std::int64_t epoch = 0; step_ < total_steps_; ++epoch) {
    EpochFigures figures{.epoch = epoch + 1, .tokens_per_sample = data_->tokens_per_sample()};
    std::vector<std::int64_t> shard = sampler_->shard(epoch);
    auto start = Clock::now();
    for (std::int64_t b = 0; b < steps_per_epoch_ && step_ < total_steps_; ++b, ++step_, ++figures.steps) {
      train_step(std::span<const std::int64_t>(shard.data() + b * replica_batch_, static_cast<std::size_t>(replica_batch_)),
                 figures);
    }
    figures.seconds = seconds_since(start);
    figures.samples = figures.steps * config_.batch;
    // Only last stages computed losses: one per step and replica.
    figures.train_loss = mean_over_ranks(world_, std::exchange(epoch_loss_sum_, 0.0),
                                         world_.rank() == 0 ? static_cast<double>(figures.steps * replicas_) : 0.0);
    share_model();
    if (config_.check_replicas) check_replicas(world_, *model_, step_);
    evaluate(world_, *data_, *model_, figures);
    say(world_, epoch_line(figures, data_->classification()));
    summary.epochs.push_back(figures);
  }
  summary.steps = step_;
  finish_run(world_, config_, summary, *model_, data_->classification());
  return summary;
}

}  // namespace

RunSummary train_pipeline(Communicator& world, const TrainConfig& config) { return PipelineTrainer(world, config).run(); }

}  // namespace braid::train
