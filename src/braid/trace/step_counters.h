// Per-step overlap counters: pure interval arithmetic over a rank's recorded events, so that
// they can be tested with hand-made intervals and recomputed from a trace file
// (`braid-trace summary`) exactly as the recorder computes them in process.
//
// Definitions (docs/tracing.md, "Counters"):
//   compute time         length of the union of the step's compute spans
//   communication time   length of the union of the step's communication spans
//   exposed communication  length of (union of the step's communication spans) minus
//                        (union of ALL compute spans of the rank): the time this rank was
//                        communicating and computing nothing. All compute spans, not only the
//                        step's own, because a step's last bucket may well be hidden behind
//                        the next step's forward pass, and then it is not exposed.
//   overlap ratio        1 - exposed / communication; 0 when the step has no communication,
//                        so a step that recorded none never looks perfectly overlapped.
//   wire bytes           sum of the step's CommEvent::wire_bytes
//   wall time            from the step's boundary to the next step's; the last step ends at
//                        the end of its last event.
// An event belongs to the step in which it started. Events that started before the first
// step() form step -1 (setup: warm-up, bucket construction), reported only when non-empty.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "braid/trace/trace_events.h"

namespace braid::trace {

// A half-open time interval [start, end) in nanoseconds. end <= start means empty.
struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

// The union of `intervals` as sorted, disjoint, non-adjacent, non-empty intervals.
std::vector<Interval> union_of(std::vector<Interval> intervals);
// Total length of a union (as union_of returns it).
std::int64_t total_length(std::span<const Interval> disjoint);
// Length of the part of `a` not covered by `b`; both must be unions (sorted, disjoint).
std::int64_t uncovered_length(std::span<const Interval> a, std::span<const Interval> b);

// Step number of events that started before the first step boundary.
inline constexpr int kSetupStep = -1;

struct StepCounters {
  int step = 0;
  std::int64_t start_ns = 0;          // the boundary (setup step: its earliest event)
  std::int64_t wall_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t comm_ns = 0;
  std::int64_t exposed_comm_ns = 0;
  std::uint64_t bytes = 0;            // sum of CommEvent::bytes
  std::uint64_t wire_bytes = 0;       // sum of CommEvent::wire_bytes
  std::int64_t comm_ops = 0;

  // 1 - exposed / communication, in [0, 1]; 0 when there was no communication.
  double overlap_ratio() const;
};

// Index into `steps` (sorted by start_ns) of the step an event starting at `t_ns` belongs
// to, or -1 when it started before the first boundary.
int step_index_at(std::span<const StepBoundary> steps, std::int64_t t_ns);

// The counters of every step of `data`, in time order (the setup step first, when present).
std::vector<StepCounters> step_counters(const TraceData& data);

}  // namespace braid::trace
