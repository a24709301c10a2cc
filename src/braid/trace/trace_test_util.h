// Test helpers shared by the trace tests: a scratch directory and hand-made traces.
#pragma once

#include <cstdint>
#include <string>

#include "braid/trace/trace_events.h"
#include "temp_dir.h"

namespace braid::trace::testing {

// The harness's scratch directory (tests/harness/temp_dir.h).
using TempDir = braid::testing::TempDir;

inline constexpr std::int64_t kMs = 1'000'000;  // nanoseconds

// Rank `rank`, anchored at steady 1 s / system `system_ns`: two steps of 10 ms; in each, a
// 6 ms compute span and a 4 ms allreduce starting 4 ms in (2 ms hidden, 2 ms exposed).
inline TraceData two_step_trace(int rank, std::int64_t system_ns) {
  TraceData d;
  d.rank = rank;
  d.anchor = {.steady_ns = 1000 * kMs, .system_ns = system_ns};
  d.hostname = "testhost";
  for (int step = 0; step < 2; ++step) {
    std::int64_t t0 = d.anchor.steady_ns + step * 10 * kMs;
    d.steps.push_back({.step = step, .start_ns = t0});
    d.compute.push_back({.name = "backward", .start_ns = t0, .end_ns = t0 + 6 * kMs});
    d.comm.push_back({.name = "allreduce", .start_ns = t0 + 4 * kMs, .end_ns = t0 + 8 * kMs,
                      .bytes = 4096, .wire_bytes = 2048, .algorithm = "ring", .codec = "fp16"});
    d.marks.push_back({.name = "ready", .at_ns = t0 + 3 * kMs});
  }
  return d;
}

}  // namespace braid::trace::testing
