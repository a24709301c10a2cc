#include "braid/trace/trace_recorder.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <thread>
#include <unordered_map>
#include <utility>

#include "braid/base/clock.h"
#include "braid/base/env.h"
#include "braid/base/error.h"
#include "braid/base/log.h"
#include "braid/base/mutex.h"
#include "braid/trace/chrome_trace.h"

namespace braid::trace {

struct TraceRecorder::State {
  explicit State(TraceOptions o);

  const TraceOptions options;
  mutable Mutex mu;
  TraceData data BRAID_GUARDED_BY(mu);
  std::size_t kept_events BRAID_GUARDED_BY(mu) = 0;  // compute + comm + marks in data
  // Open begin_compute() spans, innermost last, per calling thread.
  std::unordered_map<std::thread::id, std::vector<ComputeSpan>> open BRAID_GUARDED_BY(mu);

  // Whether one more event fits; counts it as dropped when not.
  bool admit_locked() BRAID_REQUIRES(mu) {
    if (kept_events >= options.max_events) {
      ++data.dropped_events;
      return false;
    }
    ++kept_events;
    return true;
  }
  void add_compute_locked(ComputeSpan span) BRAID_REQUIRES(mu) {
    if (admit_locked()) data.compute.push_back(std::move(span));
  }
};

namespace {

// Reads the system clock between two steady readings and pairs it with their midpoint, so
// the pair is off by at most half the (sub-microsecond) time between the readings.
ClockAnchor take_clock_anchor() {
  std::int64_t before = now_ns();
  auto system = std::chrono::system_clock::now().time_since_epoch();
  std::int64_t after = now_ns();
  return {.steady_ns = before + (after - before) / 2,
          .system_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(system).count()};
}

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace

TraceRecorder::State::State(TraceOptions o) : options(std::move(o)) {
  data.rank = options.rank;
  data.anchor = take_clock_anchor();
  data.hostname = this_hostname();
}

TraceRecorder::TraceRecorder(TraceOptions options) : state_(std::make_unique<State>(std::move(options))) {}

TraceRecorder::TraceRecorder() noexcept = default;

TraceRecorder::~TraceRecorder() { flush_noexcept(); }

TraceRecorder::TraceRecorder(TraceRecorder&&) noexcept = default;

TraceRecorder& TraceRecorder::operator=(TraceRecorder&& other) noexcept {
  if (this != &other) {
    flush_noexcept();
    state_ = std::move(other.state_);
  }
  return *this;
}

int TraceRecorder::rank() const { return state_ ? state_->options.rank : -1; }

void TraceRecorder::step(int step) {
  if (!state_) return;
  MutexLock lock(state_->mu);
  // The clock is read under the lock so boundaries are in time order even when several
  // threads call step().
  state_->data.steps.push_back({.step = step, .start_ns = now_ns()});
}

void TraceRecorder::begin_compute(std::string_view name, int lane) {
  if (!state_) return;
  ComputeSpan span{.name = std::string(name), .start_ns = now_ns(), .end_ns = 0, .lane = lane};
  MutexLock lock(state_->mu);
  state_->open[std::this_thread::get_id()].push_back(std::move(span));
}

void TraceRecorder::end_compute() {
  if (!state_) return;
  std::int64_t end = now_ns();
  MutexLock lock(state_->mu);
  auto it = state_->open.find(std::this_thread::get_id());
  if (it == state_->open.end() || it->second.empty()) {
    throw InvalidArgument({.rank = state_->options.rank, .op = "trace.end_compute"},
                          "end_compute() without a matching begin_compute() on this thread");
  }
  ComputeSpan span = std::move(it->second.back());
  it->second.pop_back();
  if (it->second.empty()) state_->open.erase(it);  // threads come and go; do not keep them
  span.end_ns = end;
  state_->add_compute_locked(std::move(span));
}

void TraceRecorder::mark(std::string_view name, int lane) {
  if (!state_) return;
  Mark m{.name = std::string(name), .at_ns = now_ns(), .lane = lane};
  MutexLock lock(state_->mu);
  if (state_->admit_locked()) state_->data.marks.push_back(std::move(m));
}

void TraceRecorder::record_compute(ComputeSpan span) {
  if (!state_) return;
  MutexLock lock(state_->mu);
  state_->add_compute_locked(std::move(span));
}

void TraceRecorder::record_comm(CommEvent event) {
  if (!state_) return;
  MutexLock lock(state_->mu);
  if (state_->admit_locked()) state_->data.comm.push_back(std::move(event));
}

void TraceRecorder::name_lane(int lane, std::string name) {
  if (!state_) return;
  MutexLock lock(state_->mu);
  for (LaneName& named : state_->data.lane_names) {
    if (named.lane == lane) {
      named.name = std::move(name);
      return;
    }
  }
  state_->data.lane_names.push_back({.lane = lane, .name = std::move(name)});
}

TraceData TraceRecorder::snapshot() const {
  if (!state_) return TraceData{.rank = -1};
  MutexLock lock(state_->mu);
  return state_->data;
}

std::vector<StepCounters> TraceRecorder::step_counters() const {
  return trace::step_counters(snapshot());
}

std::string TraceRecorder::write_trace_file(const std::string& dir) const {
  if (!state_) return "";
  return trace::write_trace_file(snapshot(), dir);
}

std::string TraceRecorder::flush() const {
  if (!state_ || state_->options.output_dir.empty()) return "";
  return write_trace_file(state_->options.output_dir);
}

void TraceRecorder::flush_noexcept() noexcept {
  try {
    flush();
  } catch (const std::exception& e) {
    log::warn("rank {}: could not write the trace file: {}", rank(), e.what());
  }
}

TraceRecorder from_environment(int rank) {
  auto dir = env::get(env::kTrace);
  if (!dir) return TraceRecorder();
  return TraceRecorder(TraceOptions{.rank = rank, .output_dir = *dir});
}

ComputeScope::ComputeScope(TraceRecorder* recorder, std::string_view name, int lane) {
  if (recorder == nullptr || !recorder->enabled()) return;
  recorder_ = recorder;
  span_.name = std::string(name);
  span_.lane = lane;
  span_.start_ns = now_ns();
}

ComputeScope::~ComputeScope() {
  if (recorder_ == nullptr) return;
  span_.end_ns = now_ns();
  recorder_->record_compute(std::move(span_));
}

CommScope::CommScope(TraceRecorder* recorder, std::string_view name, int lane) {
  if (recorder == nullptr || !recorder->enabled()) return;
  recorder_ = recorder;
  uncaught_at_start_ = std::uncaught_exceptions();
  event_.name = std::string(name);
  event_.lane = lane;
  event_.start_ns = now_ns();
}

CommScope::~CommScope() {
  if (recorder_ == nullptr) return;
  event_.end_ns = now_ns();
  // More exceptions in flight than at construction: this scope is being unwound by one.
  event_.failed = event_.failed || std::uncaught_exceptions() > uncaught_at_start_;
  recorder_->record_comm(std::move(event_));
}

}  // namespace braid::trace
