// TraceRecorder: one rank's timeline of compute spans, communication ops, marks and step
// boundaries, kept in memory and written as a Chrome-trace / Perfetto JSON file
// (chrome_trace.h) at flush() or destruction. See docs/tracing.md.
//
//   braid::trace::TraceRecorder tracer = braid::trace::from_environment(comm.rank());
//   for (int step = 0; ...; ++step) {
//     tracer.step(step);
//     { braid::trace::ComputeScope fwd(tracer, "forward"); model.forward(); }
//     { braid::trace::ComputeScope bwd(tracer, "backward"); model.backward(); }
//   }
//   // on the communication thread, around each operation:
//   braid::trace::CommScope op(tracer, "bucket 3");
//   op.event().bytes = n * 4;  op.event().algorithm = "ring";  ...run it...
//   op.event().wire_bytes = sent;                  // recorded when `op` goes out of scope
//
// A default-constructed recorder is disabled: every method returns at once (one pointer test;
// the scopes then read no clock), so instrumentation can stay in place unconditionally.
// Recording never does I/O; an enabled recorder keeps at most TraceOptions::max_events events
// and counts the rest as dropped.
//
// Thread-safety: every method may be called from any thread concurrently (one mutex; a
// record is a push_back). begin_compute/end_compute pair up per calling thread. Moving or
// destroying a recorder must not race with calls on it; scopes must not outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "braid/trace/step_counters.h"
#include "braid/trace/trace_events.h"

namespace braid::trace {

struct TraceOptions {
  int rank = 0;                 // the Chrome-trace pid and the file name's rank
  std::string output_dir;       // flush() and the destructor write here; "" = never automatically
  std::size_t max_events = std::size_t{1} << 20;  // compute + comm + marks kept (~1M, ~150 MB)
};

class TraceRecorder {
 public:
  TraceRecorder() noexcept;                        // disabled
  explicit TraceRecorder(TraceOptions options);    // enabled; takes the clock anchor now
  // Flushes when output_dir is set; a failure to write is logged (BRAID_LOG_LEVEL), not thrown.
  ~TraceRecorder();
  TraceRecorder(TraceRecorder&&) noexcept;
  TraceRecorder& operator=(TraceRecorder&&) noexcept;  // flushes the recorder it replaces

  bool enabled() const noexcept { return state_ != nullptr; }
  int rank() const;  // -1 when disabled

  // Step `step` begins now. Counters are per step; see step_counters.h for which step an
  // event belongs to.
  void step(int step);

  // A compute span on the calling thread: begin_compute opens, end_compute closes the most
  // recent open one (spans nest). REQUIRES: an open span on this thread for end_compute
  // (else braid::InvalidArgument). ComputeScope is the exception-safe form.
  void begin_compute(std::string_view name, int lane = kComputeLane);
  void end_compute();
  // An instant event on `lane`.
  void mark(std::string_view name, int lane = kComputeLane);

  // Events whose times the caller measured itself (braid::now_ns(), base/clock.h).
  void record_compute(ComputeSpan span);
  void record_comm(CommEvent event);

  // Labels `lane` in the viewer (default labels: "compute", "comm", "comm <lane>").
  void name_lane(int lane, std::string name);

  // A copy of everything recorded so far (empty TraceData with rank -1 when disabled).
  TraceData snapshot() const;
  // step_counters(snapshot()).
  std::vector<StepCounters> step_counters() const;

  // Writes <dir>/braid-trace-rank<R>.json atomically (creating dir); returns the path.
  // Disabled: writes nothing, returns "".
  std::string write_trace_file(const std::string& dir) const;
  // write_trace_file(output_dir); "" when disabled or output_dir is empty. May be called
  // repeatedly (each call rewrites the whole file).
  std::string flush() const;

 private:
  struct State;
  void flush_noexcept() noexcept;

  std::unique_ptr<State> state_;
};

// A recorder enabled when BRAID_TRACE names a directory (it then writes
// <BRAID_TRACE>/braid-trace-rank<rank>.json at flush / destruction), disabled otherwise.
TraceRecorder from_environment(int rank);

// Records a compute span from construction to destruction. The pointer form takes null for
// "not tracing" (an optional recorder, as GradSyncOptions::trace).
class ComputeScope {
 public:
  ComputeScope(TraceRecorder& recorder, std::string_view name, int lane = kComputeLane)
      : ComputeScope(&recorder, name, lane) {}
  ComputeScope(TraceRecorder* recorder, std::string_view name, int lane = kComputeLane);
  ~ComputeScope();
  ComputeScope(const ComputeScope&) = delete;
  ComputeScope& operator=(const ComputeScope&) = delete;

 private:
  TraceRecorder* recorder_ = nullptr;  // null when the recorder is disabled
  ComputeSpan span_;
};

// Records a communication op from construction to destruction. Fill event() (bytes,
// wire_bytes, algorithm, codec, lane) at any time before the scope ends; start_ns and end_ns
// are set by the scope. An op ended by an exception is recorded with failed = true. The
// pointer form takes null for "not tracing".
class CommScope {
 public:
  CommScope(TraceRecorder& recorder, std::string_view name, int lane = kCommLane)
      : CommScope(&recorder, name, lane) {}
  CommScope(TraceRecorder* recorder, std::string_view name, int lane = kCommLane);
  ~CommScope();
  CommScope(const CommScope&) = delete;
  CommScope& operator=(const CommScope&) = delete;

  CommEvent& event() { return event_; }
  bool active() const { return recorder_ != nullptr; }  // false when tracing is disabled

 private:
  TraceRecorder* recorder_ = nullptr;
  CommEvent event_;
  int uncaught_at_start_ = 0;
};

}  // namespace braid::trace
