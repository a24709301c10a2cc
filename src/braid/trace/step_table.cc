#include "braid/trace/step_table.h"

#include <fmt/format.h>

#include "braid/trace/step_counters.h"

namespace braid::trace {

namespace {

constexpr const char* kRowFormat = "{:>4}  {:>5}  {:>8}  {:>10}  {:>8}  {:>10}  {:>9}  {:>8}  {:>5}\n";

std::string ms(std::int64_t ns) { return fmt::format("{:.3f}", ns / 1e6); }

std::string row(int rank, const StepCounters& c) {
  std::string step = c.step == kSetupStep ? "setup" : fmt::format("{}", c.step);
  // No communication: an overlap percentage would mean nothing.
  std::string overlap = c.comm_ns > 0 ? fmt::format("{:.1f}", 100.0 * c.overlap_ratio()) : "-";
  return fmt::format(kRowFormat, rank, step, ms(c.wall_ns), ms(c.compute_ns), ms(c.comm_ns),
                     ms(c.exposed_comm_ns), overlap, fmt::format("{:.3f}", c.wire_bytes / 1048576.0), c.comm_ops);
}

}  // namespace

std::string format_step_table(std::span<const TraceData> ranks) {
  std::string out = fmt::format(kRowFormat, "rank", "step", "wall ms", "compute ms", "comm ms", "exposed ms",
                                "overlap %", "wire MiB", "ops");
  for (const TraceData& data : ranks) {
    for (const StepCounters& c : step_counters(data)) out += row(data.rank, c);
  }
  return out;
}

}  // namespace braid::trace
