#include "braid/parallel/timeline_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace braid::parallel {
namespace {

std::string action_label(const ScheduleSpec& spec, const Action& a) {
  std::string label = fmt::format("{}{}", action_type_name(a.type), a.microbatch);
  if (spec.chunks > 1) label += static_cast<char>('a' + a.chunk % 26);
  return label;
}

double cell_length(const SimulationResult& result) {
  double cell = result.costs.forward / result.spec.chunks;
  for (const auto& stage : result.timeline) {
    for (const TimedAction& t : stage) {
      if (is_compute(t.action.type) && t.end > t.start)
        cell = cell > 0 ? std::min(cell, t.end - t.start) : t.end - t.start;
    }
  }
  // A very short action (W = 0.001) would make rows of thousands of cells: keep them readable.
  constexpr double kMaxCells = 400;
  if (cell <= 0) cell = 1;
  return std::max(cell, result.makespan / kMaxCells);
}

}  // namespace

std::string render_ascii_timeline(const SimulationResult& result) {
  const double cell = cell_length(result);
  const auto cells = static_cast<std::size_t>(std::lround(result.makespan / cell));
  std::size_t width = 2;
  for (const auto& stage : result.timeline) {
    for (const TimedAction& t : stage) {
      if (is_compute(t.action.type)) width = std::max(width, action_label(result.spec, t.action).size());
    }
  }
  std::string out;
  for (std::size_t s = 0; s < result.timeline.size(); ++s) {
    std::vector<std::string> row(cells, ".");
    for (const TimedAction& t : result.timeline[s]) {
      if (!is_compute(t.action.type)) continue;
      const auto first = static_cast<std::size_t>(std::lround(t.start / cell));
      const auto last = static_cast<std::size_t>(std::lround(t.end / cell));
      for (std::size_t c = first; c < last && c < cells; ++c) row[c] = action_label(result.spec, t.action);
    }
    out += fmt::format("stage {:>2} |", s);
    for (const std::string& label : row) out += fmt::format(" {:<{}}", label, width);
    out += "\n";
  }
  return out;
}

std::string simulated_chrome_trace(const SimulationResult& result) {
  using nlohmann::json;
  constexpr double kMicrosecondsPerUnit = 1000;  // simulated units are read as milliseconds
  json events = json::array();
  for (std::size_t s = 0; s < result.timeline.size(); ++s) {
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", s}, {"args", {{"name", fmt::format("stage {}", s)}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", s}, {"tid", 0}, {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", s}, {"tid", 1}, {"args", {{"name", "recv wait"}}}});
    for (const TimedAction& t : result.timeline[s]) {
      const bool compute = is_compute(t.action.type);
      if (!compute && !(is_recv(t.action.type) && t.end > t.start)) continue;
      events.push_back({{"name", compute ? action_label(result.spec, t.action) : describe(t.action)},
                        {"cat", compute ? "compute" : "wait"},
                        {"ph", "X"},
                        {"pid", s},
                        {"tid", compute ? 0 : 1},
                        {"ts", t.start * kMicrosecondsPerUnit},
                        {"dur", (t.end - t.start) * kMicrosecondsPerUnit},
                        {"args", {{"microbatch", t.action.microbatch}, {"chunk", t.action.chunk}}}});
    }
  }
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"schedule", schedule_name(result.spec)},
                {"stages", result.spec.stages},
                {"microbatches", result.spec.microbatches},
                {"makespan", result.makespan},
                {"bubble_rate", result.bubble_rate()}}}};
  return doc.dump(1);
}

}  // namespace braid::parallel
