// The per-step counters as a text table (`braid-trace summary`), one row per (rank, step):
//
//   rank  step   wall ms  compute ms   comm ms  exposed ms  overlap %  wire MiB  ops
//      0     0    41.210      35.002    14.870       2.114       85.8    12.000   12
//
// The setup step (events before the first step boundary) shows as "setup".
#pragma once

#include <span>
#include <string>

#include "braid/trace/trace_events.h"

namespace braid::trace {

std::string format_step_table(std::span<const TraceData> ranks);

}  // namespace braid::trace
