#include "braid/parallel/pipeline_simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "braid/base/error.h"
#include "braid/parallel/schedule_validator.h"

namespace braid::parallel {
namespace {

void check_cost(const char* field, double value) {
  if (!std::isfinite(value) || value < 0) {
    throw InvalidArgument({}, fmt::format("cost {} must be a finite number >= 0, got {}", field, value));
  }
}

bool releases_activation(const Schedule& schedule, ActionType type) {
  return type == (schedule.split_backward() ? ActionType::kBackwardWeight : ActionType::kBackward);
}

StageStats stage_stats(const Schedule& schedule, const std::vector<TimedAction>& actions, double makespan) {
  StageStats stats;
  int in_flight = 0;
  for (const TimedAction& t : actions) {
    if (is_compute(t.action.type)) stats.busy += t.end - t.start;
    if (t.action.type == ActionType::kForward) stats.peak_in_flight = std::max(stats.peak_in_flight, ++in_flight);
    if (releases_activation(schedule, t.action.type)) --in_flight;
  }
  stats.idle = makespan - stats.busy;
  return stats;
}

}  // namespace

double SimulationResult::total_idle() const {
  double idle = 0;
  for (const StageStats& s : stages) idle += s.idle;
  return idle;
}

double SimulationResult::bubble_rate() const {
  if (makespan <= 0) return 0;
  return total_idle() / (static_cast<double>(stages.size()) * makespan);
}

int SimulationResult::peak_in_flight() const {
  int peak = 0;
  for (const StageStats& s : stages) peak = std::max(peak, s.peak_in_flight);
  return peak;
}

void check_action_costs(const ActionCosts& costs) {
  check_cost("forward", costs.forward);
  check_cost("backward_input", costs.backward_input);
  check_cost("backward_weight", costs.backward_weight);
  check_cost("p2p", costs.p2p);
}

SimulationResult simulate(const Schedule& schedule, const ActionCosts& costs) {
  check_action_costs(costs);
  check_schedule_structure(schedule);
  SimulationResult result{schedule.spec, costs, execute_schedule(schedule, costs), {}, 0};
  for (const auto& stage : result.timeline) {
    for (const TimedAction& t : stage) result.makespan = std::max(result.makespan, t.end);
  }
  for (const auto& stage : result.timeline) result.stages.push_back(stage_stats(schedule, stage, result.makespan));
  return result;
}

double theoretical_bubble_rate(const ScheduleSpec& spec, const ActionCosts& costs) {
  const double p = spec.stages;
  const double m = spec.microbatches;
  switch (spec.kind) {
    case ScheduleKind::kGPipe:
    case ScheduleKind::k1F1B: return (p - 1) / (m + p - 1);
    case ScheduleKind::kInterleaved1F1B: return (p - 1) / (spec.chunks * m + p - 1);
    case ScheduleKind::kZeroBubbleH1: {
      const double work = costs.forward + costs.backward_input + costs.backward_weight;
      const double bubble = (p - 1) * std::max(0.0, costs.forward + costs.backward_input - costs.backward_weight);
      return work + bubble > 0 ? bubble / (m * work + bubble) : 0;
    }
  }
  return 0;
}

}  // namespace braid::parallel
