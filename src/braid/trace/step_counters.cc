#include "braid/trace/step_counters.h"

#include <algorithm>
#include <limits>

namespace braid::trace {

std::vector<Interval> union_of(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return i.end <= i.start; });
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> merged;
  for (const Interval& next : intervals) {
    // Touching intervals ([0,5) and [5,9)) merge too: the result is then non-adjacent,
    // which keeps uncovered_length's walk simple.
    if (!merged.empty() && next.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, next.end);
    } else {
      merged.push_back(next);
    }
  }
  return merged;
}

std::int64_t total_length(std::span<const Interval> disjoint) {
  std::int64_t total = 0;
  for (const Interval& i : disjoint) total += i.end - i.start;
  return total;
}

std::int64_t uncovered_length(std::span<const Interval> a, std::span<const Interval> b) {
  // One merge-like walk: both lists are sorted and disjoint, so the cover of each piece of `a`
  // is a contiguous run of `b`, and a `b` interval ending before one `a` piece ends before
  // every later piece too.
  std::int64_t uncovered = 0;
  std::size_t j = 0;
  for (const Interval& piece : a) {
    std::int64_t cursor = piece.start;  // everything of `piece` before cursor is accounted for
    while (j < b.size() && b[j].end <= cursor) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start < piece.end) {
      if (b[k].start > cursor) uncovered += b[k].start - cursor;
      cursor = std::max(cursor, b[k].end);
      if (cursor >= piece.end) break;
      ++k;
    }
    if (cursor < piece.end) uncovered += piece.end - cursor;
  }
  return uncovered;
}

double StepCounters::overlap_ratio() const {
  if (comm_ns <= 0) return 0.0;
  double ratio = 1.0 - static_cast<double>(exposed_comm_ns) / static_cast<double>(comm_ns);
  return std::clamp(ratio, 0.0, 1.0);
}

int step_index_at(std::span<const StepBoundary> steps, std::int64_t t_ns) {
  auto after = std::upper_bound(steps.begin(), steps.end(), t_ns,
                                [](std::int64_t t, const StepBoundary& s) { return t < s.start_ns; });
  return static_cast<int>(after - steps.begin()) - 1;
}

namespace {

// The events of one step (or of the setup step), gathered before their unions are taken.
struct StepWindow {
  std::vector<Interval> compute;
  std::vector<Interval> comm;
  std::uint64_t bytes = 0;
  std::uint64_t wire_bytes = 0;
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();

  bool empty() const { return compute.empty() && comm.empty(); }
  void extend(const Interval& i) {
    first_start = std::min(first_start, i.start);
    last_end = std::max(last_end, std::max(i.start, i.end));
  }
};

// Window 0 is the setup step; window i + 1 is data.steps[i].
std::vector<StepWindow> gather_windows(const TraceData& data) {
  std::vector<StepWindow> windows(data.steps.size() + 1);
  for (const ComputeSpan& span : data.compute) {
    Interval i{span.start_ns, span.end_ns};
    StepWindow& w = windows[step_index_at(data.steps, span.start_ns) + 1];
    w.compute.push_back(i);
    w.extend(i);
  }
  for (const CommEvent& op : data.comm) {
    Interval i{op.start_ns, op.end_ns};
    StepWindow& w = windows[step_index_at(data.steps, op.start_ns) + 1];
    w.comm.push_back(i);
    w.bytes += op.bytes;
    w.wire_bytes += op.wire_bytes;
    w.extend(i);
  }
  return windows;
}

StepCounters count_window(const StepWindow& w, std::span<const Interval> all_compute) {
  StepCounters c;
  std::vector<Interval> comm = union_of(w.comm);
  c.compute_ns = total_length(union_of(w.compute));
  c.comm_ns = total_length(comm);
  c.exposed_comm_ns = uncovered_length(comm, all_compute);
  c.bytes = w.bytes;
  c.wire_bytes = w.wire_bytes;
  c.comm_ops = static_cast<std::int64_t>(w.comm.size());
  return c;
}

}  // namespace

std::vector<StepCounters> step_counters(const TraceData& data) {
  std::vector<StepWindow> windows = gather_windows(data);
  std::vector<Interval> all_compute;
  for (const ComputeSpan& span : data.compute) all_compute.push_back({span.start_ns, span.end_ns});
  all_compute = union_of(std::move(all_compute));

  std::vector<StepCounters> result;
  const StepWindow& setup = windows[0];
  if (!setup.empty()) {
    StepCounters c = count_window(setup, all_compute);
    c.step = kSetupStep;
    c.start_ns = setup.first_start;
    std::int64_t end = data.steps.empty() ? setup.last_end : data.steps[0].start_ns;
    c.wall_ns = std::max<std::int64_t>(0, end - c.start_ns);
    result.push_back(c);
  }
  for (std::size_t i = 0; i < data.steps.size(); ++i) {
    const StepWindow& w = windows[i + 1];
    StepCounters c = count_window(w, all_compute);
    c.step = data.steps[i].step;
    c.start_ns = data.steps[i].start_ns;
    std::int64_t end = i + 1 < data.steps.size() ? data.steps[i + 1].start_ns
                                                  : std::max(w.last_end, c.start_ns);
    c.wall_ns = end - c.start_ns;
    result.push_back(c);
  }
  return result;
}

}  // namespace braid::trace
