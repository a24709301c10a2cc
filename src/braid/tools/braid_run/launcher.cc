#include "braid/tools/braid_run/launcher.h"

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/tools/braid_run/elastic_store.h"
#include "braid/tools/braid_run/exit_status.h"
#include "braid/tools/braid_run/job_environment.h"
#include "braid/tools/braid_run/node_environment.h"
#include "braid/tools/braid_run/node_rendezvous.h"
#include "braid/tools/braid_run/node_token.h"
#include "braid/tools/braid_run/output_forwarder.h"
#include "braid/tools/braid_run/rank_process.h"
#include "braid/tools/braid_run/shm_cleanup.h"
#include "braid/tools/braid_run/signal_scope.h"

namespace braid::launcher {

namespace {

// Each poll() returns at least this often, so rank exits are re-checked even if a SIGCHLD
// were ever missed; it costs nothing measurable.
constexpr int kPollCapMs = 1000;
// Once every rank has ended and its group is killed, pipes close at once, unless a process
// that left its rank's group (setsid) still holds one. Its output is not worth waiting for.
constexpr Seconds kDrainLimit{2.0};

std::string count_ranks(int n) { return n == 1 ? "1 rank" : fmt::format("{} ranks", n); }

// One line on braid-run's stderr, in one write so it cannot split around rank output.
void announce(const std::string& message) {
  std::string line = fmt::format("braid-run: {}\n", message);
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;  // stderr gone: nowhere left to report to
}

// The ranks of one job and the policy that stops them. Members are destroyed in reverse
// order: output pipes first, then the ranks (each SIGKILLed and reaped if still there).
class Job {
 public:
  // `watch`: the multi-node job's NodeWatch (node_watch.h), null on a single host; `elastic`:
  // braid-run --elastic's store (null without --elastic; single host only).
  Job(const LauncherOptions& options, SignalScope& signals, NodeWatch* watch = nullptr,
      ElasticStore* elastic = nullptr)
      : options_(options), signals_(signals), watch_(watch), elastic_(elastic) {}

  void start(const JobIdentity& identity);
  void spawn(int local, int rank);
  // Runs until every rank has ended; returns braid-run's exit code.
  int supervise();

 private:
  bool stopping() const { return exit_code_.has_value(); }
  int running_count() const;
  int next_wakeup_ms() const;

  void wait_for_events(int timeout_ms);
  void handle_signals();
  void on_interrupt(int signal);
  void check_ranks();
  void on_rank_lost(std::size_t index, const ExitStatus& status);
  void check_survivors();
  void check_deadlines();
  void check_other_nodes();
  // `local`: the reason arose on this node, so the other nodes' braid-runs are told.
  void stop(int exit_code, const std::string& reason, bool local = true);
  void kill_all();
  void signal_all(int signal);
  void finish();

  const LauncherOptions& options_;
  SignalScope& signals_;
  NodeWatch* watch_;
  ElasticStore* elastic_;
  int succeeded_ = 0;  // ranks that exited 0 (--elastic: the job succeeds with --min-ranks of them)
  std::vector<RankProcess> ranks_;
  std::vector<int> slots_;  // per entry of ranks_: the local slot it runs in (restarts reuse it)
  std::vector<int> binding_;  // per local slot: its CPU (--bind-to); empty: unbound
  int restarts_ = 0;        // --max-restarts used so far
  JobIdentity identity_;
  std::vector<std::string> base_environment_;
  std::vector<OutputForwarder> outputs_;
  Deadline job_deadline_ = Deadline::never();
  std::optional<int> exit_code_;  // set by the first reason to stop the job
  Deadline kill_deadline_ = Deadline::never();
  bool killed_ = false;
};

void Job::start(const JobIdentity& identity) {
  identity_ = identity;
  if (options_.timeout_seconds) job_deadline_ = Deadline::after(Seconds(*options_.timeout_seconds));
  base_environment_ = current_environment();
  ranks_.reserve(static_cast<std::size_t>(options_.num_ranks + options_.max_restarts));
  binding_ = cpu_binding(options_.bind, options_.num_ranks, allowed_cpus());
  // Node-major: on a single host global_rank() is the local rank.
  for (int local = 0; local < options_.num_ranks; ++local) spawn(local, global_rank(options_, local));
}

// Starts local rank `local`'s program as `rank` (a restarted one: its fresh member id, passed
// as BRAID_ELASTIC_JOIN; its other variables are its launch slot's).
void Job::spawn(int local, int rank) {
  const int slot = global_rank(options_, local);
  std::vector<std::string> environment =
      watch_ != nullptr ? node_rank_environment(base_environment_, options_, identity_, local)
                        : rank_environment(base_environment_, options_.extra_env, identity_, slot, options_.num_ranks,
                                           options_.elastic ? options_.min_ranks : 0);
  if (rank != slot) set_variable(environment, env::kElasticJoin.name, std::to_string(rank));
  const int cpu = binding_.empty() ? -1 : binding_[static_cast<std::size_t>(local)];
  set_own_cpu(environment, each_rank_alone_on_its_cpu(binding_) ? cpu : -1);
  RankLaunch launch{.rank = rank, .argv = options_.command, .environment = std::move(environment),
                    .capture_output = options_.prefix_output, .signal_mask = signals_.original_mask(),
                    .cpu = cpu};
  RankProcess& process = ranks_.emplace_back(RankProcess::spawn(launch));
  slots_.push_back(local);
  if (!options_.prefix_output) return;
  std::string prefix = fmt::format("[{}] ", rank);
  outputs_.emplace_back(process.take_stdout(), STDOUT_FILENO, prefix);
  outputs_.emplace_back(process.take_stderr(), STDERR_FILENO, prefix);
}

int Job::supervise() {
  while (running_count() > 0) {
    wait_for_events(next_wakeup_ms());
    handle_signals();
    check_ranks();
    check_other_nodes();
    check_deadlines();
  }
  check_survivors();
  finish();
  return exit_code_.value_or(0);
}

int Job::running_count() const {
  return static_cast<int>(std::count_if(ranks_.begin(), ranks_.end(), [](const RankProcess& r) { return !r.ended(); }));
}

int Job::next_wakeup_ms() const {
  int ms = kPollCapMs;
  if (!stopping()) ms = std::min(ms, job_deadline_.remaining_ms(kPollCapMs));
  if (stopping() && !killed_) ms = std::min(ms, kill_deadline_.remaining_ms(kPollCapMs));
  return ms;
}

// Sleeps until a signal arrives, a pipe has output, or `timeout_ms` passes, and forwards one
// read's worth of every readable pipe (one read each: a chatty rank cannot starve the rest).
void Job::wait_for_events(int timeout_ms) {
  std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
  // Readable once the job failed elsewhere; stays so, and check_other_nodes stops the job.
  if (watch_ != nullptr && !stopping() && running_count() > 0) fds.push_back({watch_->fd(), POLLIN, 0});
  const std::size_t first_output = fds.size();
  std::vector<OutputForwarder*> sources;
  for (OutputForwarder& output : outputs_) {
    if (!output.open()) continue;
    fds.push_back({output.source_fd(), POLLIN, 0});
    sources.push_back(&output);
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
    if (errno == EINTR) return;
    throw_system_error({.op = "poll"}, "poll", errno);
  }
  for (std::size_t i = first_output; i < fds.size(); ++i) {
    if (fds[i].revents != 0) sources[i - first_output]->pump();
  }
}

void Job::handle_signals() {
  while (int signal = signals_.next_signal()) {
    // SIGCHLD: check_ranks() runs next anyway. SIGPIPE: the write that caused it got EPIPE.
    if (signal != SIGCHLD && signal != SIGPIPE) on_interrupt(signal);
  }
}

void Job::on_interrupt(int signal) {
  if (!stopping()) {
    stop(128 + signal,
         fmt::format("received {}; terminating {}", signal_name(signal), count_ranks(running_count())));
  } else if (!killed_) {
    // A second Ctrl-C means "now": skip the rest of the grace period.
    announce(fmt::format("received {} again; killing the ranks", signal_name(signal)));
    kill_all();
  }
}

void Job::check_ranks() {
  // By index: a restart (on_rank_lost) appends to ranks_.
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    RankProcess& rank = ranks_[i];
    if (rank.ended()) continue;
    std::optional<ExitStatus> status = rank.poll_exit();
    if (!status) continue;
    if (status->success()) {
      ++succeeded_;
      continue;
    }
    if (elastic_ && !stopping()) {
      on_rank_lost(i, *status);
      continue;
    }
    if (stopping()) {
      // A rank killed by a signal braid-run did not send (a SIGKILL from elsewhere, a crash)
      // is often the cause of the first failure reported, which may have been seen first: name it.
      const bool sent_by_us = status->kind == ExitStatus::Kind::kSignaled &&
                              (status->value == SIGTERM || (killed_ && status->value == SIGKILL));
      if (status->kind == ExitStatus::Kind::kSignaled && !sent_by_us) {
        announce(fmt::format("rank {} (pid {}) {} as well", rank.rank(), rank.pid(), status->describe()));
      }
      continue;
    }
    std::string reason = fmt::format("rank {} (pid {}) {}", rank.rank(), rank.pid(), status->describe());
    if (int others = running_count(); others > 0) {
      reason += fmt::format("; terminating the other {}", count_ranks(others));
    }
    stop(status->shell_code(), reason);
  }
}

// --elastic: the death is reported, to the user and to the survivors' membership agreement
// (through the store). With --max-restarts left the program starts again in the same slot as a
// newcomer (a fresh member id); else the job goes on while at least --min-ranks ranks run.
void Job::on_rank_lost(std::size_t index, const ExitStatus& status) {
  const int lost = ranks_[index].rank();
  elastic_->declare_dead(lost);
  std::string reason = fmt::format("rank {} (pid {}) {}", lost, ranks_[index].pid(), status.describe());
  if (restarts_ < options_.max_restarts) {
    ++restarts_;
    const int id = elastic_->allocate_member_id();
    spawn(slots_[index], id);
    announce(fmt::format("{}; --elastic: restarting it as member {} (pid {}; restart {} of --max-restarts {}), "
                         "which rejoins at a step boundary",
                         reason, id, ranks_.back().pid(), restarts_, options_.max_restarts));
    return;
  }
  const int left = running_count();
  if (options_.max_restarts > 0) reason += fmt::format(" (--max-restarts {} used up)", options_.max_restarts);
  if (left + succeeded_ >= options_.min_ranks) {
    announce(fmt::format("{}; --elastic: {} continue without it", reason, count_ranks(left)));
    return;
  }
  stop(status.shell_code(), fmt::format("{}; --elastic: only {} left, fewer than --min-ranks {}; terminating them",
                                        reason, count_ranks(left), options_.min_ranks));
}

// --elastic, every rank ended without braid-run stopping the job: it succeeded if at least
// --min-ranks ranks exited 0.
void Job::check_survivors() {
  if (!elastic_ || stopping() || succeeded_ >= options_.min_ranks) return;
  exit_code_ = 1;
  announce(fmt::format("--elastic: only {} exited 0, fewer than --min-ranks {}", count_ranks(succeeded_),
                       options_.min_ranks));
}

void Job::check_deadlines() {
  if (!stopping() && job_deadline_.expired()) {
    stop(kTimeoutExitCode, fmt::format("job timed out after {} s (--timeout); terminating {}",
                                       *options_.timeout_seconds, count_ranks(running_count())));
  }
  if (stopping() && !killed_ && kill_deadline_.expired()) kill_all();
}

void Job::check_other_nodes() {
  if (watch_ == nullptr || stopping()) return;
  std::optional<NodeFailure> failure = watch_->failure();
  if (!failure) return;
  stop(failure->exit_code,
       fmt::format("job failed: {}; terminating this node's {}", failure->message, count_ranks(running_count())),
       /*local=*/false);
}

void Job::stop(int exit_code, const std::string& reason, bool local) {
  exit_code_ = exit_code;
  const bool tell_other_nodes = watch_ != nullptr && local;
  const std::string line = tell_other_nodes ? fmt::format("node {}: {}", options_.nodes.node_rank, reason) : reason;
  announce(line);
  signal_all(SIGTERM);
  kill_deadline_ = Deadline::after(Seconds(options_.grace_seconds));
  // After the SIGTERMs: over a cut link the store calls may take their whole deadline.
  if (tell_other_nodes) watch_->publish_failure({exit_code, line});
}

void Job::kill_all() {
  if (int left = running_count(); left > 0) {
    announce(fmt::format("{} still running {} s after SIGTERM; sending SIGKILL", count_ranks(left),
                         options_.grace_seconds));
  }
  signal_all(SIGKILL);
  killed_ = true;
}

// Ended ranks are signalled too: their unreaped leaders keep the group ids reserved, and
// whatever they started may still be running in those groups.
void Job::signal_all(int signal) {
  for (RankProcess& rank : ranks_) rank.signal_group(signal);
}

// Every rank has ended. What they left behind in their groups goes too (no orphans), then
// the rest of their output is forwarded and the leaders are reaped.
void Job::finish() {
  signal_all(SIGKILL);
  Deadline drain = Deadline::after(kDrainLimit);
  auto any_open = [this] {
    return std::any_of(outputs_.begin(), outputs_.end(), [](const OutputForwarder& o) { return o.open(); });
  };
  while (any_open() && !drain.expired()) {
    wait_for_events(drain.remaining_ms(kPollCapMs));
    while (signals_.next_signal() != 0) {
      // The job is over; a late Ctrl-C has nothing left to stop.
    }
  }
  for (OutputForwarder& output : outputs_) output.close();
  for (RankProcess& rank : ranks_) rank.kill_and_reap();
}

// Fails before any rank starts when braid-run could not hold every rank's pipes.
void require_descriptors(const LauncherOptions& options) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;  // unknown: the spawns will tell
  std::string problem = check_descriptor_limit(options, limit.rlim_cur, limit.rlim_max);
  if (!problem.empty()) throw InvalidArgument({.op = "launch"}, problem);
}

// The first SIGINT / SIGTERM / SIGHUP pending on `signals`, or 0.
int pending_interrupt(SignalScope& signals) {
  while (int signal = signals.next_signal()) {
    if (signal != SIGCHLD && signal != SIGPIPE) return signal;
  }
  return 0;
}

// One node of a multi-node job: the node rendezvous first (node_rendezvous.h), then the
// ranks, watched for failures elsewhere. The session's threads start after `signals` blocked
// the handled signals, so they inherit the mask and the signalfd alone receives them.
int run_node_job(const LauncherOptions& options, SignalScope& signals) {
  JobIdentity identity = make_node_job_identity(options);
  NodeSession session(options, identity.job_token, [&] { return pending_interrupt(signals) != 0; });
  ShmJanitor janitor(identity.job_id);
  Job job(options, signals, &session.watch());
  job.start(identity);
  return session.finish(job.supervise(), [&] { return pending_interrupt(signals); });
}

}  // namespace

int run_job(const LauncherOptions& options) {
  require_descriptors(options);
  // Declaration order is destruction order reversed: the ranks die before the janitor removes
  // their segments, and signals stay routed to the signalfd until both are done.
  SignalScope signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE});
  if (is_multinode(options)) return run_node_job(options, signals);
  JobIdentity identity = make_job_identity(options);
  if (!options.nodes.token_file.empty()) identity.job_token = read_token_file(options.nodes.token_file);
  ShmJanitor janitor(identity.job_id);
  std::optional<ElasticStore> elastic;
  if (options.elastic) elastic.emplace(identity, options.num_ranks);
  Job job(options, signals, nullptr, elastic ? &*elastic : nullptr);
  job.start(identity);
  return job.supervise();
}

}  // namespace braid::launcher
