// Reading braid trace files back into TraceData, so that `braid-trace summary` computes the
// per-step counters from a file exactly as the recorder does in process.
#pragma once

#include <string>
#include <vector>

#include "braid/trace/trace_events.h"

namespace braid::trace {

// One TraceData per rank in the file (one for a rank's own file, several for a merged one),
// in rank order. Times are relative to the file's time origin: anchor.steady_ns is 0 and
// anchor.system_ns is the rank's recorded system-clock anchor. Counter events are not read
// (step_counters recomputes them); events of unknown categories are skipped.
// Throws braid::InvalidArgument (cannot read) or braid::Corrupt (not JSON, not a braid
// trace, malformed events), naming the file.
std::vector<TraceData> read_trace_file(const std::string& path);
// The same from a trace file's text (`path` names it in errors: Corrupt only).
std::vector<TraceData> read_trace_text(const std::string& text, const std::string& path);

}  // namespace braid::trace
