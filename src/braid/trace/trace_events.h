// What a rank's timeline is made of, as plain data: the recorder (trace_recorder.h) collects
// these, the exporter (chrome_trace.h) writes them, the reader (trace_reader.h) reads them back
// and the counters (step_counters.h) are pure functions over them.
//
// Every timestamp is nanoseconds of braid::Clock (std::chrono::steady_clock, base/clock.h) in
// the recording process. Steady clocks of different processes are not comparable, so each
// trace also carries a ClockAnchor: one steady reading paired with one system_clock reading,
// from which `braid-trace merge` places ranks on a common axis (docs/tracing.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::trace {

// Lanes are the rows of a rank's timeline (the Chrome-trace "tid"). Compute spans default to
// kComputeLane, communication to kCommLane; a caller with several communication threads
// (a DP and a TP engine) gives each its own lane >= kCommLane.
inline constexpr int kComputeLane = 0;
inline constexpr int kCommLane = 1;

// A span of work the caller did on this rank (forward, backward of layer 3, optimizer step).
// Spans may nest and overlap; the counters use their union.
struct ComputeSpan {
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int lane = kComputeLane;
};

// One communication operation (a collective, one bucket's allreduce, a send).
struct CommEvent {
  std::string name;             // "allreduce", "bucket 3"
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t bytes = 0;       // payload the caller asked to move (count * element size)
  std::uint64_t wire_bytes = 0;  // bytes this rank actually sent (after compression, per algorithm)
  std::string algorithm;        // "ring", "shm_direct"; "" when unknown
  std::string codec;            // "none", "fp16", "topk:0.01"; "" when unknown
  int lane = kCommLane;
  bool failed = false;          // the operation ended by throwing
};

// An instant on the timeline ("forward done", "bucket 3 ready").
struct Mark {
  std::string name;
  std::int64_t at_ns = 0;
  int lane = kComputeLane;
};

// The moment step `step` began. Steps end where the next one begins (docs/tracing.md).
struct StepBoundary {
  int step = 0;
  std::int64_t start_ns = 0;
};

// The same instant read from the steady clock (what events use) and from the system clock
// (comparable across processes on one host, and across hosts up to their clock skew).
struct ClockAnchor {
  std::int64_t steady_ns = 0;
  std::int64_t system_ns = 0;  // nanoseconds since the Unix epoch
};

// A lane's label in the viewer (Perfetto's thread name).
struct LaneName {
  int lane = 0;
  std::string name;
};

// Everything one rank recorded. Events are in recording order, not necessarily time order
// (a communication op is recorded when it ends).
struct TraceData {
  int rank = 0;
  ClockAnchor anchor;
  std::string hostname;
  std::vector<ComputeSpan> compute;
  std::vector<CommEvent> comm;
  std::vector<Mark> marks;
  std::vector<StepBoundary> steps;  // in time order
  std::vector<LaneName> lane_names; // lanes named by the caller; others get default names
  std::uint64_t dropped_events = 0; // events not kept because the recorder was full
};

// The label of `lane` in `data`: the caller's name, else "compute", "comm" or "comm <lane>".
std::string lane_label(const TraceData& data, int lane);

}  // namespace braid::trace
