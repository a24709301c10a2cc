// Chrome-trace / Perfetto JSON export of one rank's TraceData ("JSON Object Format":
// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}), the format
// ui.perfetto.dev and chrome://tracing open. Layout (docs/tracing.md, "File format"):
//   pid = rank, tid = lane; "M" metadata names the process "rank R" and each lane;
//   compute spans and communication ops are complete events ("X", cat "compute" / "comm",
//   args: step, and for comm bytes, wire_bytes, algorithm, codec);
//   marks are instant events ("i", cat "mark"); step boundaries are process-wide instants
//   ("i", cat "step", args.step); per-step counters are counter events ("C", cat "counters").
// ts and dur are microseconds; ts counts from the rank's clock anchor (the recorder's
// creation), whose steady and system readings otherData carries for `braid-trace merge`.
#pragma once

#include <string>

#include "braid/trace/trace_events.h"

namespace braid::trace {

// "braid-trace-rank<rank>.json": the file each rank writes into the trace directory.
std::string trace_file_name(int rank);

// The whole JSON document for `data`.
std::string to_chrome_trace_json(const TraceData& data);

// Writes to_chrome_trace_json(data) to <dir>/trace_file_name(data.rank) atomically (temp file
// + rename), creating `dir` if needed. Returns the path. Throws braid::SystemError on failure.
std::string write_trace_file(const TraceData& data, const std::string& dir);

}  // namespace braid::trace
