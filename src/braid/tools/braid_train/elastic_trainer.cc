#include "braid/tools/braid_train/elastic_trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/elastic_group.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/torch/model_state_bytes.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/elastic_config.h"
#include "braid/tools/braid_train/model_snapshot.h"
#include "braid/tools/braid_train/models.h"
#include "braid/tools/braid_train/output_paths.h"
#include "braid/tools/braid_train/training_common.h"
#include "braid/tools/braid_train/training_data.h"

namespace braid::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Wall-clock time, for the recovery line: a benchmark that kills a rank from outside knows
// when it did, and subtracts (bench/elastic_accuracy.sh).
double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What a lost rank looks like from a collective; anything else is not for elastic recovery.
bool is_loss(const Error& e) { return e.kind() == ErrorKind::kPeerLost || e.kind() == ErrorKind::kTimeout; }

// Global batch `t` of an epoch is permutation[t*B .. (t+1)*B) (wrapping, as the sampler pads);
// rank r of `world` takes its positions r, r + world, ...: DistributedSampler's striding, so on
// the first world every rank trains on exactly what the plain trainer gives it.
std::vector<std::int64_t> rank_samples(const std::vector<std::int64_t>& permutation, std::int64_t t, std::int64_t batch,
                                       int rank, int world) {
  std::vector<std::int64_t> samples;
  const auto n = static_cast<std::int64_t>(permutation.size());
  for (std::int64_t i = rank; i < batch; i += world) samples.push_back(permutation[static_cast<std::size_t>((t * batch + i) % n)]);
  return samples;
}

std::int64_t max_over_ranks(Communicator& comm, std::int64_t value) {
  allreduce(comm, &value, &value, 1, DType::kI64, ReduceOp::kMax);
  return value;
}

class ElasticTrainer {
 public:
  explicit ElasticTrainer(const TrainConfig& config) : config_(config), group_(ElasticGroup::join()) {}

  RunSummary run();

 private:
  Communicator& comm() { return group_.comm(); }
  void set_up();
  void connect_ddp();
  std::int64_t epochs_due() const;
  void train_step();
  void evaluate_epoch();
  void finish(RunSummary& summary);
  void recover(const Error& error, bool in_step);
  void report_recovery();
  void progress(double loss);

  const TrainConfig& config_;
  ElasticGroup group_;
  std::unique_ptr<TrainingData> data_;
  std::shared_ptr<TrainModel> model_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;
  std::unique_ptr<torch::DistributedDataParallel> ddp_;
  SnapshotPair snapshots_;
  std::int64_t steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  std::int64_t permutation_epoch_ = -1;
  std::vector<std::int64_t> permutation_;
  std::vector<double> step_losses_;       // per completed step: the global batch's mean loss
  std::vector<EpochFigures> step_figures_;  // per completed step: its time and traffic (rank 0's)
  std::vector<EpochFigures> epochs_;                // evaluated epochs
  std::vector<RunSummary::ElasticEvent> events_;
  std::optional<Clock::time_point> recovering_since_;  // set from a loss until the next completed step
  Clock::time_point last_progress_ = Clock::now();
};

void ElasticTrainer::set_up() {
  validate(config_, comm().size());
  check_output_paths(comm(), config_);
  set_threads(config_);
  data_ = load_training_data(config_);
  ::torch::manual_seed(config_.seed);
  model_ = make_model(model_spec(config_, data_->vocabulary(), nullptr));
  optimizer_ = make_optimizer(config_, model_->parameters());
  // The epoch's length is the first world's (as the plain trainer's): a loss changes who trains
  // on the global batch, not which batches an epoch has.
  torch::DistributedSampler sampler(data_->train_size(), comm().size(), comm().rank(), {.seed = config_.seed});
  steps_per_epoch_ = sampler.shard_size() / (config_.batch / comm().size());
  if (steps_per_epoch_ == 0) {
    throw InvalidArgument({.rank = comm().rank(), .op = "braid-train"},
                          fmt::format("--batch {} is larger than the training set of {} samples", config_.batch,
                                      data_->train_size()));
  }
  total_steps_ = config_.steps > 0 ? config_.steps : config_.epochs * steps_per_epoch_;
  connect_ddp();
  snapshots_.keep(take_snapshot(0, *model_, *optimizer_));
}

void ElasticTrainer::connect_ddp() {
  ddp_ = std::make_unique<torch::DistributedDataParallel>(
      comm(), model_, torch::DdpOptions{.bucket_cap = config_.bucket_mb, .policy = make_policy(config_),
                                        .overlap = config_.overlap});
}

// Epochs whose steps are all done (the last one may be short, with --steps).
std::int64_t ElasticTrainer::epochs_due() const {
  if (step_ == total_steps_) return (step_ + steps_per_epoch_ - 1) / steps_per_epoch_;
  return step_ / steps_per_epoch_;
}

void ElasticTrainer::train_step() {
  const auto start = Clock::now();
  const std::int64_t epoch = step_ / steps_per_epoch_;
  if (epoch != permutation_epoch_) {
    permutation_ = torch::DistributedSampler(data_->train_size(), 1, 0, {.seed = config_.seed}).permutation(epoch);
    permutation_epoch_ = epoch;
  }
  std::vector<std::int64_t> indices =
      rank_samples(permutation_, step_ % steps_per_epoch_, config_.batch, comm().rank(), comm().size());
  ddp_->zero_grad();
  Batch batch = data_->train_batch(indices);
  ::torch::Tensor loss = loss_of(model_->forward(batch.input), batch.target);
  // This rank's share of the global batch; the DDP averages over the ranks, so the gradient is
  // weighted by share x world (exactly 1 when the world divides --batch).
  const double share = static_cast<double>(indices.size()) / static_cast<double>(config_.batch);
  (loss * (share * comm().size())).backward();
  GradSyncStats stats = ddp_->synchronize();
  const double mean_loss = check_loss_is_finite(comm(), config_, loss.item<double>() * share, step_ + 1);
  if (config_.clip_grad > 0) ::torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.clip_grad);
  optimizer_->step();
  ++step_;
  step_losses_.push_back(mean_loss);
  step_figures_.push_back({.step_seconds = seconds_since(start), .communication_seconds = stats.communication_seconds,
                           .exposed_seconds = stats.exposed_seconds, .wire_bytes = stats.wire.wire_bytes,
                           .dense_wire_bytes = stats.wire.dense_wire_bytes, .payload_bytes = stats.wire.payload_bytes,
                           .fp32_bytes = stats.wire.elements * sizeof(float)});
  if (config_.check_replicas) check_replicas(comm(), *model_, step_);
  snapshots_.keep(take_snapshot(step_, *model_, *optimizer_));
  if (recovering_since_) report_recovery();
  progress(mean_loss);
}

void ElasticTrainer::evaluate_epoch() {
  const auto e = static_cast<std::int64_t>(epochs_.size());
  const std::int64_t first = e * steps_per_epoch_, last = std::min(step_, first + steps_per_epoch_);
  EpochFigures figures{.epoch = e + 1, .steps = last - first, .samples = (last - first) * config_.batch};
  for (std::int64_t s = first; s < last; ++s) {
    const EpochFigures& step = step_figures_[static_cast<std::size_t>(s)];
    figures.train_loss += step_losses_[static_cast<std::size_t>(s)] / static_cast<double>(last - first);
    figures.step_seconds += step.step_seconds;
    figures.communication_seconds += step.communication_seconds;
    figures.exposed_seconds += step.exposed_seconds;
    figures.wire_bytes += step.wire_bytes;
    figures.dense_wire_bytes += step.dense_wire_bytes;
    figures.payload_bytes += step.payload_bytes;
    figures.fp32_bytes += step.fp32_bytes;
  }
  figures.seconds = figures.step_seconds;
  figures.tokens_per_sample = data_->tokens_per_sample();
  evaluate(comm(), *data_, *model_, figures);
  say(comm(), epoch_line(figures, data_->classification()));
  epochs_.push_back(figures);
}

void ElasticTrainer::finish(RunSummary& summary) {
  summary = {.model = config_.model, .world = comm().size(), .threads = config_.threads,
             .parameters = ddp_->parameter_count(), .compress = config_.compress, .overlap = config_.overlap,
             .blas = blas_description(), .data = data_->describe(), .epochs = epochs_, .steps = step_,
             .step_losses = step_losses_};
  summary.elastic_events = events_;
  torch::ModelStateBytes state = torch::model_state_bytes(ddp_->parameters(), optimizer_.get());
  summary.model_state = {.parameters = state.parameters, .gradients = state.gradients, .master = state.master,
                         .optimizer_state = state.optimizer_state};
  finish_run(comm(), config_, summary, *model_, data_->classification());
}

// Shrinks to the survivors, rolls back to the agreed step and reconnects the DDP. A loss during
// any of it throws again, into run()'s loop, which recovers again.
void ElasticTrainer::recover(const Error& error, bool in_step) {
  if (!recovering_since_) recovering_since_ = Clock::now();
  std::fprintf(stderr, "braid-train: member %d noticed a lost rank at step %lld: %s\n", group_.id(),
               static_cast<long long>(step_), error.what());
  const std::int64_t reached = step_ + (in_step ? 1 : 0);
  const Membership before = group_.membership();
  ddp_.reset();  // it holds the failed communicator
  const Membership& now = group_.shrink(step_);
  restore_snapshot(snapshots_.at(now.resume_step), *model_, *optimizer_);
  step_ = now.resume_step;
  step_losses_.resize(static_cast<std::size_t>(step_));
  step_figures_.resize(static_cast<std::size_t>(step_));
  while (!epochs_.empty() && epochs_.back().epoch * steps_per_epoch_ > step_) epochs_.pop_back();
  RunSummary::ElasticEvent event{.generation = now.generation, .world_after = now.size(), .noticed_at_step = reached,
                                 .resume_step = step_};
  for (int id : before.members) {
    if (now.rank_of(id) < 0) event.lost.push_back(id);
  }
  event.steps_lost = max_over_ranks(comm(), reached) - step_;
  connect_ddp();
  if (events_.empty() || events_.back().generation != now.generation - 1 || events_.back().recover_seconds > 0) {
    events_.push_back(event);
  } else {  // lost again before recovering: one event, from the first notice, naming every rank lost
    event.lost.insert(event.lost.begin(), events_.back().lost.begin(), events_.back().lost.end());
    events_.back() = event;
  }
}

void ElasticTrainer::report_recovery() {
  RunSummary::ElasticEvent& e = events_.back();
  e.recover_seconds = seconds_since(*recovering_since_);
  recovering_since_.reset();
  say(comm(), fmt::format("braid-train: elastic: lost member(s) {} at step {}; {} ranks continue (generation {}), "
                          "rolled back to step {}: {} step(s) lost, recovered in {:.2f} s (at unix time {:.3f})",
                          fmt::join(e.lost, ","), e.noticed_at_step, e.world_after, e.generation, e.resume_step,
                          e.steps_lost, e.recover_seconds, unix_seconds()));
}

void ElasticTrainer::progress(double loss) {
  if (config_.quiet || seconds_since(last_progress_) < config_.log_interval) return;
  last_progress_ = Clock::now();
  say(comm(), fmt::format("  step {}/{} on {} ranks  loss {:.4f}", step_, total_steps_, comm().size(), loss));
}

RunSummary ElasticTrainer::run() {
  set_up();
  say(comm(), fmt::format("braid-train --elastic: {} on {} ranks (at least {}); {}; {} parameters; global batch {}; "
                          "{} steps per epoch",
                          config_.model, comm().size(), group_.min_ranks(), data_->describe(),
                          ddp_->parameter_count(), config_.batch, steps_per_epoch_));
  RunSummary summary;
  for (bool finished = false; !finished;) {
    bool in_step = false;
    try {
      if (static_cast<std::int64_t>(epochs_.size()) < epochs_due()) {
        evaluate_epoch();
      } else if (step_ < total_steps_) {
        in_step = true;
        train_step();
      } else {
        finish(summary);
        finished = true;
      }
    } catch (const Error& e) {
      if (!is_loss(e)) throw;
      recover(e, in_step);
    }
  }
  return summary;
}

}  // namespace

RunSummary train_elastic(const TrainConfig& config) {
  // Before joining: a refused mode is the command line's fault, whatever launched the ranks.
  if (std::string why = elastic_refusal(config); !why.empty()) throw InvalidArgument({.op = "braid-train --elastic"}, why);
  return ElasticTrainer(config).run();
}

}  // namespace braid::train
