// The pipeline simulator: given per-action costs, the timeline a schedule produces, and what
// it costs (makespan, idle time per stage, bubble rate, activation memory). The timeline
// comes from schedule_execution.h (a validated schedule always runs to completion there).
//
//   Schedule s = make_schedule({ScheduleKind::k1F1B, /*p=*/4, /*m=*/8});
//   SimulationResult r = simulate(s, {.forward = 1, .backward_input = 1, .backward_weight = 1});
//   r.bubble_rate();   // 3/11 == (p-1)/(m+p-1)
//
// Definitions (docs/pipeline.md, "Simulator"):
//   makespan        the time the last action of any stage ends (the step time).
//   busy(s)         the sum of stage s's compute-action durations.
//   idle(s)         makespan - busy(s): waiting for data, and the ramps at both ends.
//   bubble rate     sum of idle / (p * makespan): the fraction of stage-time not computing.
//                   GPipe and 1F1B with zero P2P time: (p-1)/(m+p-1) for any costs.
//   in flight(s)    (micro-batch, chunk) pairs whose forward has run on stage s and whose
//                   backward has not finished (B; or W when backward is split: the weight
//                   gradient still needs the layer inputs). Its peak is the activation memory
//                   in units of one chunk's activations for one micro-batch.
#pragma once

#include <vector>

#include "braid/parallel/schedule_execution.h"

namespace braid::parallel {

struct StageStats {
  double busy = 0;
  double idle = 0;
  int peak_in_flight = 0;
};

struct SimulationResult {
  ScheduleSpec spec;
  ActionCosts costs;
  ExecutedSchedule timeline;
  std::vector<StageStats> stages;
  double makespan = 0;

  double total_idle() const;
  double bubble_rate() const;  // total_idle / (p * makespan); 0 for an empty step
  int peak_in_flight() const;  // max over stages
};

// Throws InvalidArgument when a cost is negative or not finite, naming it.
void check_action_costs(const ActionCosts& costs);

// Simulates `schedule` (validated first: throws InvalidArgument as validate_schedule does, or
// as check_action_costs).
SimulationResult simulate(const Schedule& schedule, const ActionCosts& costs);

// The textbook bubble rate of spec's kind, ignoring P2P time (docs/pipeline.md):
//   gpipe, 1f1b:      (p-1) / (m+p-1)
//   interleaved:V:    (p-1) / (V*m + p-1)       (the bubble time divided by V)
//   zb1:              (p-1)(F+I-W) / (m(F+I+W) + (p-1)(F+I-W)), for m >= p and W <= F+I
//                     (with F = I = W a third of 1F1B's bubble time)
double theoretical_bubble_rate(const ScheduleSpec& spec, const ActionCosts& costs);

}  // namespace braid::parallel
