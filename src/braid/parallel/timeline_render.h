// Pictures of a simulated timeline: an ASCII chart with one row per stage (the diagrams of
// seeds/004 and of the papers), and a Chrome-trace JSON document for ui.perfetto.dev.
#pragma once

#include <string>

#include "braid/parallel/pipeline_simulator.h"

namespace braid::parallel {

// One row per stage; time runs left to right in cells of the shortest compute action (or
// 1/v of the forward cost, whichever is shorter; at most 400 cells per row). A compute action fills the cells it covers
// with its label: F3, B3, I3 (input gradient), W3; with v > 1 the chunk follows as a letter
// (F3a is micro-batch 3 in chunk 0, F3b in chunk 1). '.' is idle. Cells are rounded to the
// nearest boundary, so costs that are not multiples of the cell draw approximately; the
// numbers in simulate() are exact.
//
//   stage 0 | F0 F1 F2 F3 .  .  .  B0 B0 F4 ...
std::string render_ascii_timeline(const SimulationResult& result);

// Chrome-trace JSON ({"traceEvents": [...]}) with the simulated stages as processes
// (pid = stage, "stage s"), compute actions as complete events on lane 0 (cat "compute",
// args: microbatch, chunk) and receive waits as complete events on lane 1 (cat "wait").
// Simulated time units are written as milliseconds. One document for all stages (the
// recorder's format in trace/ is one file per rank process, merged later by braid-trace; a
// simulation has no processes, so it writes the merged form directly).
std::string simulated_chrome_trace(const SimulationResult& result);

}  // namespace braid::parallel
