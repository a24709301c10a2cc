// Runs a schedule's action lists in simulated time: the one engine behind the validator's
// dependency and deadlock checks (unit costs) and the simulator's timeline (given costs).
//
// Model: each stage executes its list in order, one action at a time. A compute action takes
// its cost. A send is instantaneous for the sender and its data arrives p2p seconds later; a
// recv waits until that arrival (its span is the wait). Nothing else is shared between stages
// (no link contention), so a stage's times depend only on its own list and the arrival times
// of what it receives, and the engine can advance stages round-robin until all are done or
// none can move (deadlock).
#pragma once

#include <vector>

#include "braid/parallel/pipeline_schedule.h"

namespace braid::parallel {

// Times of a *whole stage* (all the layers it holds; a chunk's action costs 1/v of them, so
// schedules with different v compare at equal model size). The full backward B costs
// backward_input + backward_weight.
struct ActionCosts {
  double forward = 1;          // F
  double backward_input = 1;   // I: gradient with respect to the stage's input
  double backward_weight = 1;  // W: gradient with respect to its weights
  double p2p = 0;              // one activation or gradient transfer between two stages
};

struct TimedAction {
  Action action;
  double start = 0;
  double end = 0;  // == start for a send; a recv's span is its wait
};

// Per stage, its actions with their times, in list order.
using ExecutedSchedule = std::vector<std::vector<TimedAction>>;

// Executes `schedule` (whose structure check_schedule_structure has accepted) with `costs`.
// Throws InvalidArgument, naming the stage, the action and the micro-batch, when an action
// runs before something it depends on (validator rule 3), when a recv meets a message for a
// different micro-batch (rule 4, FIFO pairing), or when the stages deadlock.
ExecutedSchedule execute_schedule(const Schedule& schedule, const ActionCosts& costs);

// Seconds `action` computes for (0 for transfers).
double compute_cost(const ScheduleSpec& spec, const ActionCosts& costs, const Action& action);

}  // namespace braid::parallel
