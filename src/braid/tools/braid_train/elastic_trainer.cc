#include "braid/tools/braid_train/elastic_trainer.h"

#include <unistd.h>

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/elastic_group.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/torch/model_state_bytes.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/elastic_config.h"
#include "braid/tools/braid_train/elastic_state_transfer.h"
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

// Seconds since this process started (/proc/self/stat's start time against /proc/uptime): a
// newcomer reports how long it took from its start to its first step. -1 when unreadable.
double process_age_seconds() {
  std::ifstream stat("/proc/self/stat"), uptime_file("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double uptime = 0;
  const std::size_t after_name = text.rfind(')');  // the command name may hold spaces
  if (!(uptime_file >> uptime) || after_name == std::string::npos) return -1;
  std::istringstream fields(text.substr(after_name + 2));
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  long long start_ticks = 0;
  if (!(fields >> start_ticks)) return -1;
  return uptime - static_cast<double>(start_ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::int64_t max_over_ranks(Communicator& comm, std::int64_t value) {
  allreduce(comm, &value, &value, 1, DType::kI64, ReduceOp::kMax);
  return value;
}

class ElasticTrainer {
 public:
  explicit ElasticTrainer(const TrainConfig& config) : config_(config), grow_to_(config.grow_to) {}

  RunSummary run();

 private:
  Communicator& comm() { return group_->comm(); }
  void set_up_local();
  void set_up();
  bool join_as_newcomer();  // false: the job finished before admitting it
  void check_for_newcomers();
  void wait_for_starting_newcomer();
  void adopt(const Membership& before, const Membership& now, std::int64_t reached);
  void connect_ddp();
  std::int64_t epochs_due() const;
  void train_step();
  void evaluate_epoch();
  void finish(RunSummary& summary);
  void recover(const Error& error, bool in_step);
  void report_recovery();
  void report_event(const RunSummary::ElasticEvent& event);
  void report_first_step();
  void progress(double loss);

  const TrainConfig& config_;
  std::optional<ElasticGroup> group_;
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
  // From the first notice of a loss (the decision of a join) until the next completed step: the
  // events whose recover_seconds is still 0 are measured from them.
  std::optional<Clock::time_point> recovering_since_, joining_since_;
  Clock::time_point last_progress_ = Clock::now();
  std::int64_t checked_at_ = -1;   // the step whose boundary looked for newcomers (-1: none since a change)
  std::int64_t waited_for_ = 0;    // newcomers' ids this rank already waited --rejoin-wait for
  bool newcomer_ = false;          // this process joined a running job
  int grow_to_ = 0;                // --grow-to, until a wait for it expires
  bool first_step_reported_ = false;
};

// What needs no peer: a newcomer does it before it announces itself, so the members wait only
// for the state transfer.
void ElasticTrainer::set_up_local() {
  set_threads(config_);
  data_ = load_training_data(config_);
  ::torch::manual_seed(config_.seed);
  model_ = make_model(model_spec(config_, data_->vocabulary(), nullptr));
  optimizer_ = make_optimizer(config_, model_->parameters());
}

void ElasticTrainer::set_up() {
  group_.emplace(ElasticGroup::join());
  validate(config_, comm().size());
  check_output_paths(comm(), config_);
  set_up_local();
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
                                        .overlap = config_.overlap,
                                        .registered_buckets = config_.registered_buckets,
                                        .gradient_as_bucket_view = config_.bucket_views});
}

// A newcomer: ready to train before it announces itself, then admitted at the members' next step
// boundary; it receives the state and trains the step the others train next.
bool ElasticTrainer::join_as_newcomer() {
  newcomer_ = true;
  std::optional<ElasticGroup> group = ElasticGroup::join_running([this] { set_up_local(); });
  if (!group) {
    std::printf("braid-train: the elastic job finished before a step boundary admitted this newcomer\n");
    return false;
  }
  group_.emplace(std::move(*group));
  TrainingPosition position;
  share_training_state(comm(), position, *optimizer_, /*newcomer=*/true);
  step_ = position.step;
  steps_per_epoch_ = position.steps_per_epoch;
  total_steps_ = position.total_steps;
  step_losses_ = std::move(position.step_losses);
  step_figures_.resize(static_cast<std::size_t>(step_));  // rank 0's figures are the report's
  for (std::int64_t e = 0; e < position.epochs_evaluated; ++e) epochs_.push_back({.epoch = e + 1});
  connect_ddp();  // its broadcast gives this rank rank 0's parameters
  snapshots_.keep(take_snapshot(step_, *model_, *optimizer_));
  checked_at_ = step_;  // the members looked at this boundary already
  std::printf("braid-train: member %d joined %s, %.2f s after its process started\n", group_->id(),
              group_->membership().describe().c_str(), process_age_seconds());
  std::fflush(stdout);
  return true;
}

// --rejoin-wait: a newcomer took an id (braid-run is restarting a rank, or one was started by
// hand) but is still starting: wait for its announcement, once per newcomer, rather than train on
// without it; with --grow-to, also until the job would have that many ranks. Every rank polls the
// store itself, so none waits in a collective past BRAID_TIMEOUT; the broadcast that follows
// decides. A wait that expires short of --grow-to stops this rank waiting for growth.
void ElasticTrainer::wait_for_starting_newcomer() {
  if (config_.rejoin_wait <= 0) return;
  const Deadline deadline = Deadline::after(Seconds(config_.rejoin_wait));
  for (;;) {
    const std::int64_t taken = group_->ids_taken(), announced = group_->announced_count();
    const bool starting = taken > announced && taken > waited_for_;
    const std::int64_t pending = announced - group_->membership().announced_admitted;
    const bool short_of_goal = grow_to_ > group_->membership().size() + pending;
    if (!starting && !short_of_goal) break;
    if (deadline.expired()) {
      grow_to_ = 0;
      break;
    }
    std::this_thread::sleep_for(kPollInterval * 5);
  }
  waited_for_ = group_->ids_taken();
}

// At a step boundary: rank 0 reads how many newcomers announced themselves and one broadcast
// makes it every member's value, so all decide the same boundary; then all admit them.
void ElasticTrainer::check_for_newcomers() {
  checked_at_ = step_;
  wait_for_starting_newcomer();
  std::int64_t announced = comm().rank() == 0 ? group_->announced_count() : 0;
  broadcast(comm(), &announced, 1, DType::kI64, 0);
  if (announced <= group_->membership().announced_admitted) return;
  joining_since_ = Clock::now();
  const Membership before = group_->membership();
  ddp_.reset();  // it holds this generation's communicator
  adopt(before, group_->admit(step_, announced), step_);
}

// Takes on generation `now` (after a loss or a join): rolls back to its resume step, sends the
// state to its newcomers, reconnects the DDP and records the event.
void ElasticTrainer::adopt(const Membership& before, const Membership& now, std::int64_t reached) {
  checked_at_ = -1;  // every member looks again at the next boundary, whatever it had done before
  if (now.resume_step != step_) {
    restore_snapshot(snapshots_.at(now.resume_step), *model_, *optimizer_);
    step_ = now.resume_step;
    step_losses_.resize(static_cast<std::size_t>(step_));
    step_figures_.resize(static_cast<std::size_t>(step_));
    while (!epochs_.empty() && epochs_.back().epoch * steps_per_epoch_ > step_) epochs_.pop_back();
  }
  RunSummary::ElasticEvent event{.generation = now.generation, .world_after = now.size(), .noticed_at_step = reached,
                                 .resume_step = step_};
  for (int id : before.members) {
    if (now.rank_of(id) < 0) event.lost.push_back(id);
  }
  for (int id : now.members) {
    if (before.rank_of(id) < 0) event.joined.push_back(id);
  }
  if (!event.joined.empty()) {
    TrainingPosition position{.step = step_, .steps_per_epoch = steps_per_epoch_, .total_steps = total_steps_,
                              .epochs_evaluated = static_cast<std::int64_t>(epochs_.size()),
                              .step_losses = step_losses_};
    share_training_state(comm(), position, *optimizer_, /*newcomer=*/false);
    checked_at_ = step_;  // as the newcomers have it
  }
  event.steps_lost = event.lost.empty() ? 0 : max_over_ranks(comm(), reached) - step_;
  connect_ddp();
  const bool lost_again = !events_.empty() && events_.back().generation == now.generation - 1 &&
                          events_.back().recover_seconds == 0 && events_.back().joined.empty() && event.joined.empty();
  if (lost_again) {  // lost again before the first step: one event, from the first notice, naming every rank lost
    event.lost.insert(event.lost.begin(), events_.back().lost.begin(), events_.back().lost.end());
    events_.back() = event;
  } else {
    events_.push_back(event);
  }
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
  if (recovering_since_ || joining_since_) report_recovery();
  if (newcomer_ && !first_step_reported_) report_first_step();
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
  std::fprintf(stderr, "braid-train: member %d noticed a lost rank at step %lld: %s\n", group_->id(),
               static_cast<long long>(step_), error.what());
  const std::int64_t reached = step_ + (in_step ? 1 : 0);
  const Membership before = group_->membership();
  ddp_.reset();  // it holds the failed communicator
  adopt(before, group_->shrink(step_), reached);
}

// The first step after one or more events (a loss and then a join before it, say): each gets its
// seconds and its line.
void ElasticTrainer::report_recovery() {
  auto first = events_.end();
  while (first != events_.begin() && std::prev(first)->recover_seconds == 0) --first;
  for (auto e = first; e != events_.end(); ++e) {
    const std::optional<Clock::time_point>& since = e->lost.empty() ? joining_since_ : recovering_since_;
    e->recover_seconds = since ? seconds_since(*since) : seconds_since(*(recovering_since_ ? recovering_since_ : joining_since_));
    report_event(*e);
  }
  recovering_since_.reset();
  joining_since_.reset();
}

void ElasticTrainer::report_event(const RunSummary::ElasticEvent& e) {
  if (!e.lost.empty()) {
    say(comm(), fmt::format("braid-train: elastic: lost member(s) {} at step {}; {} ranks continue (generation {}), "
                            "rolled back to step {}: {} step(s) lost, recovered in {:.2f} s (at unix time {:.3f})",
                            fmt::join(e.lost, ","), e.noticed_at_step, e.world_after, e.generation, e.resume_step,
                            e.steps_lost, e.recover_seconds, unix_seconds()));
  }
  if (!e.joined.empty()) {
    say(comm(), fmt::format("braid-train: elastic: member(s) {} joined at step {}; {} ranks continue (generation "
                            "{}), first step after in {:.2f} s (at unix time {:.3f})",
                            fmt::join(e.joined, ","), e.resume_step, e.world_after, e.generation, e.recover_seconds,
                            unix_seconds()));
  }
}

// A newcomer's own line (say() prints on rank 0 only): from its process's start to its first step.
void ElasticTrainer::report_first_step() {
  first_step_reported_ = true;
  std::printf("braid-train: member %d: first step (step %lld) completed %.2f s after its process started (at unix "
              "time %.3f)\n",
              group_->id(), static_cast<long long>(step_), process_age_seconds(), unix_seconds());
  std::fflush(stdout);
}

void ElasticTrainer::progress(double loss) {
  if (config_.quiet || seconds_since(last_progress_) < config_.log_interval) return;
  last_progress_ = Clock::now();
  say(comm(), fmt::format("  step {}/{} on {} ranks  loss {:.4f}", step_, total_steps_, comm().size(), loss));
}

RunSummary ElasticTrainer::run() {
  if (ElasticGroup::is_newcomer()) {
    if (!join_as_newcomer()) return {};
  } else {
    set_up();
    say(comm(), fmt::format("braid-train --elastic: {} on {} ranks (at least {}); {}; {} parameters; global batch {}; "
                            "{} steps per epoch",
                            config_.model, comm().size(), group_->min_ranks(), data_->describe(),
                            ddp_->parameter_count(), config_.batch, steps_per_epoch_));
  }
  RunSummary summary;
  for (bool finished = false; !finished;) {
    bool in_step = false;
    try {
      if (checked_at_ != step_ && step_ < total_steps_) {
        check_for_newcomers();
      } else if (static_cast<std::int64_t>(epochs_.size()) < epochs_due()) {
        evaluate_epoch();
      } else if (step_ < total_steps_) {
        in_step = true;
        train_step();
      } else {
        group_->close();  // newcomers still waiting leave: no boundary is left to admit them
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
