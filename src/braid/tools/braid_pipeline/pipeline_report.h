// What `braid-pipeline schedule` and `braid-pipeline simulate` print: pure functions over the
// schedules and the simulator of braid::parallel, so they are tested without a process.
#pragma once

#include <string>
#include <vector>

#include "braid/parallel/pipeline_simulator.h"

namespace braid::tools {

// Each stage's action list, one line per stage ("stage 0: F0 send-act0>1 ...").
std::string format_action_lists(const parallel::Schedule& schedule);

// The ASCII timeline of `result` followed by its numbers (makespan, bubble: simulated and
// theoretical, idle and peak in-flight activations per stage).
std::string format_schedule_report(const parallel::SimulationResult& result);

// The schedules `simulate` compares for (p, m, v): gpipe, 1f1b, interleaved:v (when v > 1),
// zb1 — as specs, valid or not.
std::vector<parallel::ScheduleSpec> comparison_specs(int stages, int microbatches, int chunks);

// One row per schedule of comparison_specs: theoretical bubble, simulated bubble, makespan
// (in cost units), bubble time per stage, peak in-flight activations; a schedule whose spec
// is invalid for (p, m, v) gets a row saying why.
std::string format_simulation_table(int stages, int microbatches, int chunks, const parallel::ActionCosts& costs);

}  // namespace braid::tools
