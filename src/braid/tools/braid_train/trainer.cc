#include "braid/tools/braid_train/trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/codec_spec.h"
#include "braid/torch/checkpoint.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/torch/fully_sharded.h"
#include "braid/torch/model_state_bytes.h"
#include "braid/torch/zero_optimizer.h"
#include "braid/trace/trace_recorder.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/fully_sharded_training.h"
#include "braid/tools/braid_train/models.h"
#include "braid/tools/braid_train/mesh_trainer.h"
#include "braid/tools/braid_train/mixed_precision_training.h"
#include "braid/tools/braid_train/moe_gpt_trainer.h"
#include "braid/tools/braid_train/trainer_checkpoint.h"
#include "braid/tools/braid_train/training_common.h"
#include "braid/tools/braid_train/training_data.h"
#include "braid/tools/braid_train/zero_pp.h"

namespace braid::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class Trainer {
 public:
  Trainer(Communicator& comm, const TrainConfig& config) : comm_(comm), config_(config) {}

  RunSummary run();

 private:
  void set_up();
  void resume();
  void train_epoch(std::int64_t epoch, std::int64_t first_batch, EpochFigures& figures);
  double train_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  TrainerCheckpoint checkpoint() {
    return {.comm = comm_, .config = config_, .ddp = ddp_.get(), .optimizer = optimizer_.get(), .zero = zero_.get(),
            .sharded = sharded_.get(), .scaler = precision_.scaler ? &*precision_.scaler : nullptr,
            .steps_per_epoch = steps_per_epoch_};
  }
  void progress(std::int64_t epoch, std::int64_t batch, double loss);
  bool update();
  void finish_epoch(EpochFigures& figures, double loss_sum, double epoch_seconds);
  std::int64_t parameter_count() const { return sharded_ ? sharded_->parameter_count() : ddp_->parameter_count(); }

  Communicator& comm_;
  const TrainConfig& config_;
  std::unique_ptr<TrainingData> data_;
  std::shared_ptr<TrainModel> model_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;  // DDP (--zero 0)
  std::unique_ptr<trace::TraceRecorder> trace_;
  std::unique_ptr<torch::DistributedDataParallel> ddp_;
  std::unique_ptr<torch::ZeroOptimizer> zero_;             // --zero 1 or 2, over ddp_
  std::unique_ptr<torch::FullyShardedModule> sharded_;     // --zero 3, instead of ddp_
  std::unique_ptr<torch::DistributedSampler> sampler_;
  std::int64_t rank_batch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  torch::TrainingPosition start_;
  bool resumed_ = false;
  std::vector<double> step_losses_;  // the mean over ranks of each step's loss
  PrecisionPlan precision_;
  Clock::time_point last_progress_ = Clock::now();
};

void Trainer::set_up() {
  set_threads(config_);
  data_ = load_training_data(config_);
  ::torch::manual_seed(config_.seed);  // every rank builds the same model; DDP still broadcasts rank 0's
  model_ = make_model(model_spec(config_, data_->vocabulary(), nullptr));  // no dropout: that is the mesh trainer's
  if (!config_.trace_dir.empty()) {
    trace_ = std::make_unique<trace::TraceRecorder>(trace::TraceOptions{.rank = comm_.rank(), .output_dir = config_.trace_dir});
  }
  ZeroPlusPlus zero_pp = parse_zero_pp(config_.zero_pp, config_.zero);  // stage 3's: make_fully_sharded
  precision_ = plan_precision(config_);  // --precision: the wire's codecs (--zero-pp is refused with it)
  // --zero 3: the FullyShardedModule replaces DDP and steps its own shards (fully_sharded_training.h).
  if (config_.zero == 3) sharded_ = make_fully_sharded(comm_, config_, *model_);
  if (!sharded_) {
    bool ddp_wire = config_.zero == 0;
    compress::CodecId gradient_codec = ddp_wire ? compress::CodecId::kNone : zero_pp.gradient_codec(precision_.wire);
    ddp_ = std::make_unique<torch::DistributedDataParallel>(
        comm_, model_,
        torch::DdpOptions{.bucket_cap = config_.bucket_mb,
                          .policy = ddp_wire ? precision_.ddp_policy(config_) : make_policy(config_),
                          .overlap = config_.overlap,
                          .registered_buckets = config_.registered_buckets,
                          .gradient_as_bucket_view = config_.bucket_views && config_.zero == 0,
                          .trace = trace_.get(), .zero_stage = config_.zero,
                          .zero_codec = {.id = gradient_codec},
                          .zero_error_feedback = zero_pp.qgz_error_feedback});
  }
  // ZeRO: the optimizer steps this rank's flat shards (its state is 1/n of DDP's); the same
  // elementwise update as over the whole parameters.
  if (config_.zero == 1 || config_.zero == 2) {
    zero_ = std::make_unique<torch::ZeroOptimizer>(
        *ddp_, [this](std::vector<::torch::Tensor> shards) { return make_optimizer(config_, std::move(shards)); },
        precision_.zero_options(zero_pp));
  } else if (!sharded_) {
    optimizer_ = make_optimizer(config_, model_->parameters());
  }
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
  if (config_.resumes()) resume();
}

// --resume promises the user a continued run: without a checkpoint it is refused on every rank
// (the loaders' answer is rank 0's, so all agree); --resume-if-present starts at step 0 and
// says so. A ZeRO checkpoint resumes at any world size (trainer_checkpoint.h).
void Trainer::resume() {
  std::optional<torch::TrainingPosition> position = load_trainer_checkpoint(checkpoint());
  if (position) {
    start_ = *position;
    step_ = position->step;
    resumed_ = true;
    return;
  }
  std::string path = checkpoint().path();
  if (config_.resume_if_present) {
    say(comm_, fmt::format("no checkpoint at {}: --resume-if-present starts from step 0", path));
    return;
  }
  throw InvalidArgument({.rank = comm_.rank(), .op = "braid-train --resume"},
                        fmt::format("there is no checkpoint at {} to resume from; drop --resume to start from step 0, "
                                    "or pass --resume-if-present to resume only when there is one",
                                    path));
}

double Trainer::train_step(std::span<const std::int64_t> indices, EpochFigures& figures) {
  auto start = Clock::now();
  if (sharded_) {
    sharded_->zero_grad();
  } else {
    ddp_->zero_grad();
  }
  std::int64_t micro = rank_batch_ / config_.accumulate;
  double loss_sum = 0;
  for (std::int64_t k = 0; k < config_.accumulate; ++k) {
    Batch batch = data_->train_batch(indices.subspan(static_cast<std::size_t>(k * micro), static_cast<std::size_t>(micro)));
    std::optional<NoSync> accumulate_only;
    if (sharded_) {
      sharded_->set_sync(k + 1 == config_.accumulate);
    } else if (k + 1 < config_.accumulate) {
      accumulate_only.emplace(ddp_->grad_sync());
    }
    ::torch::Tensor loss;
    {
      trace::ComputeScope forward(trace_.get(), "forward");
      torch::AutocastScope autocast(precision_.precision);
      loss = loss_of(sharded_ ? sharded_->forward(batch.input) : model_->forward(batch.input), batch.target)
                 .to(::torch::kFloat32) /
             static_cast<double>(config_.accumulate);
    }
    {
      trace::ComputeScope backward(trace_.get(), "backward");
      // The last rank poisons one gradient element at --inject-overflow's step.
      InjectedOverflow poison(model_->parameters(),
                              InjectedOverflow::injects_at(config_, step_ + 1, comm_) && k + 1 == config_.accumulate);
      (precision_.scaler ? loss * precision_.scaler->scale() : loss).backward();
    }
    loss_sum += loss.item<double>();
    if (sharded_ && k + 1 < config_.accumulate) sharded_->synchronize();  // ends the accumulating backward
  }
  GradSyncStats stats = sharded_ ? stage3_stats(sharded_->synchronize()) : ddp_->synchronize();
  step_losses_.push_back(check_loss_is_finite(comm_, config_, loss_sum, step_ + 1) / comm_.size());
  bool stepped = false;
  {
    trace::ComputeScope optimizer(trace_.get(), "optimizer");
    stepped = update();
  }
  if (trace_) trace_->step(static_cast<int>(step_ + 1));
  figures.step_seconds += seconds_since(start);
  figures.communication_seconds += stats.communication_seconds;
  figures.exposed_seconds += stats.exposed_seconds;
  std::uint64_t gathered = zero_ && stepped ? zero_->gather_wire_bytes() : 0;  // a skipped step gathers nothing
  figures.wire_bytes += stats.wire.wire_bytes + gathered;  // ZeRO: + the allgather
  if (zero_) {  // each part against its fp32 collective (qgZ's and qwZ's cuts)
    figures.zero_wire.gradients += stats.wire.wire_bytes;
    figures.zero_wire.parameters += gathered;
    figures.zero_wire.fp32_each += zero_->fp32_gather_wire_bytes();
    figures.zero_wire.gradient_transport += stats.wire.transport_bytes;
  }
  figures.dense_wire_bytes += stats.wire.dense_wire_bytes;
  figures.payload_bytes += stats.wire.payload_bytes;
  figures.fp32_bytes += stats.wire.elements * sizeof(float);
  return loss_sum;
}

// Steps the optimizer; under a loss scale first divides the averaged gradients by it and skips
// the step, on every rank alike, when they overflowed anywhere. Returns whether it stepped.
bool Trainer::update() {
  bool steps = precision_.unscale_or_skip(comm_, step_ + 1, [this](double scale) {
    return sharded_ ? sharded_->unscale_gradients(scale)
           : zero_  ? zero_->unscale_gradients(scale)
                    : torch::unscale_gradients(torch::gradients_of(model_->parameters()), scale, comm_);
  });
  if (!steps) {
    if (zero_) zero_->skip_step();
    return false;
  }
  if (sharded_) {
    if (config_.clip_grad > 0) sharded_->clip_grad_norm(config_.clip_grad);
    sharded_->step();
  } else if (zero_) {
    // Each rank holds its shard of the averaged gradient: the norm is summed over the shards.
    if (config_.clip_grad > 0) zero_->clip_grad_norm(config_.clip_grad);
    zero_->step();
  } else {
    // The gradients are whole and averaged on every rank: the local norm is the global one.
    if (config_.clip_grad > 0) ::torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.clip_grad);
    optimizer_->step();
  }
  return true;
}

void Trainer::progress(std::int64_t epoch, std::int64_t batch, double loss) {
  if (config_.quiet || seconds_since(last_progress_) < config_.log_interval) return;
  last_progress_ = Clock::now();
  say(comm_, fmt::format("  epoch {} step {}/{} (batch {}/{})  loss {:.4f} (rank 0)", epoch + 1, step_, total_steps_, batch,
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
    if (config_.check_replicas) {
      std::optional<torch::FullyShardedModule::FullParameters> whole;
      if (sharded_) whole.emplace(*sharded_);
      check_replicas(comm_, *model_, step_);
    }
    progress(epoch, batch + 1, loss);
    bool epoch_done = batch + 1 == steps_per_epoch_;
    if (!config_.checkpoint_dir.empty() &&
        ((config_.checkpoint_every > 0 && step_ % config_.checkpoint_every == 0) ||
         (config_.checkpoint_every == 0 && (epoch_done || step_ == total_steps_)))) {
      save_trainer_checkpoint(checkpoint(), epoch_done ? torch::TrainingPosition{step_, epoch + 1, 0}
                                                       : torch::TrainingPosition{step_, epoch, batch + 1});
    }
  }
  figures.samples = figures.steps * config_.batch;
  finish_epoch(figures, loss_sum, seconds_since(start));
}

void Trainer::finish_epoch(EpochFigures& figures, double loss_sum, double epoch_seconds) {
  figures.train_loss = mean_over_ranks(comm_, loss_sum, static_cast<double>(figures.steps));
  figures.seconds = epoch_seconds;
  figures.tokens_per_sample = data_->tokens_per_sample();
  std::optional<torch::FullyShardedModule::FullParameters> whole;  // stage 3: evaluate the whole model
  if (sharded_) whole.emplace(*sharded_);
  // 16-bit parameters compute only under autocast (an fp32 input would meet bf16 weights).
  torch::AutocastScope autocast(precision_.sixteen_bit_parameters() ? precision_.precision : torch::Precision::kFp32);
  evaluate(comm_, *data_, *model_, figures);
}

RunSummary Trainer::run() {
  set_up();
  say(comm_, fmt::format("braid-train: {} on {} ranks x {} thread(s); {}; {} parameters; global batch {} ({} per rank{}); "
                  "{} steps per epoch; BLAS: {}",
                  config_.model, comm_.size(), config_.threads, data_->describe(), parameter_count(),
                  config_.batch, rank_batch_,
                  config_.accumulate > 1 ? fmt::format(" in {} micro-batches", config_.accumulate) : "",
                  steps_per_epoch_, blas_description()));
  if (resumed_) say(comm_, fmt::format("resumed from {} at step {} (epoch {}, batch {})", checkpoint().path(),
                                start_.step, start_.epoch + 1, start_.batch_in_epoch));
  RunSummary summary{.model = config_.model, .world = comm_.size(), .threads = config_.threads,
                     .parameters = parameter_count(), .compress = config_.compress, .overlap = config_.overlap,
                     .blas = blas_description(), .data = data_->describe(), .resumed = resumed_,
                     .zero_stage = config_.zero, .zero_pp = config_.zero_pp};
  for (std::int64_t epoch = start_.epoch; step_ < total_steps_; ++epoch) {
    EpochFigures figures{.epoch = epoch + 1};
    train_epoch(epoch, epoch == start_.epoch ? start_.batch_in_epoch : 0, figures);
    say(comm_, epoch_line(figures, data_->classification()));
    summary.epochs.push_back(figures);
  }
  summary.steps = step_;
  summary.step_losses = step_losses_;
  precision_.report(summary);
  torch::ModelStateBytes state = sharded_ ? sharded_->model_state_bytes()
                                 : zero_  ? zero_->model_state_bytes()
                                          : torch::model_state_bytes(ddp_->parameters(), optimizer_.get());
  if (sharded_) summary.gathers = gather_report(*sharded_);
  summary.model_state = {.parameters = state.parameters, .gradients = state.gradients, .master = state.master,
                         .optimizer_state = state.optimizer_state};
  if (ddp_) {
    summary.model_state.communication_buffers =
        static_cast<std::int64_t>(ddp_->grad_sync().send_buffer_bytes() + ddp_->grad_sync().shard_buffer_bytes());
    summary.model_state.peak_gradients = ddp_->peak_gradient_bytes();
  }
  std::optional<torch::FullyShardedModule::FullParameters> whole;  // stage 3: the digest and export see the whole model
  if (sharded_) whole.emplace(*sharded_);
  finish_run(comm_, config_, summary, *model_, data_->classification());
  return summary;
}

}  // namespace

RunSummary train(Communicator& comm, const TrainConfig& config) {
  if (config.model == "moe-gpt") return train_moe_gpt(comm, config);
  if (config.uses_mesh()) return train_on_mesh(comm, config);
  return Trainer(comm, config).run();
}

}  // namespace braid::train
