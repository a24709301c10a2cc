#include "braid/trace/trace_events.h"

#include <fmt/format.h>

namespace braid::trace {

std::string lane_label(const TraceData& data, int lane) {
  for (const LaneName& named : data.lane_names) {
    if (named.lane == lane) return named.name;
  }
  if (lane == kComputeLane) return "compute";
  if (lane == kCommLane) return "comm";
  if (lane > kCommLane) return fmt::format("comm {}", lane);
  return fmt::format("lane {}", lane);
}

}  // namespace braid::trace
