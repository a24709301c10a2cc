// libFuzzer target over the trace reader (trace/trace_reader.h): the input is the text of a
// trace file, as `braid-trace summary` and `braid-trace merge` read one that may come from
// anywhere (another braid version, a hand edit, a truncated copy).
//
// Findings (fuzz_support.h):
//   - an exception other than braid::Corrupt from read_trace_text (nlohmann's own exceptions
//     included: the reader must turn a field of the wrong type into Corrupt naming the file);
//   - a crash or sanitizer report, e.g. a signed overflow in a time or byte sum (the reader's
//     bounds in trace_json.h exist to rule those out) or the per-step summary on what was read;
//   - what was read not surviving the writer: each rank read back from to_chrome_trace_json
//     must hold the same spans, operations, marks and steps, and a second write and read must
//     give exactly the first (the writer adds default lane names once; times are nanoseconds
//     within the reader's bounds, where a double holds them exactly).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/trace/chrome_trace.h"
#include "braid/trace/step_counters.h"
#include "braid/trace/trace_reader.h"
#include "fuzz_support.h"

namespace braid::trace {
namespace {

using fuzz::require;

// Every field the reader fills, as text: equal descriptions are equal data.
std::string describe(const TraceData& d) {
  std::string out = fmt::format("rank {} host '{}' anchor {}/{} dropped {}\n", d.rank, d.hostname, d.anchor.steady_ns,
                                d.anchor.system_ns, d.dropped_events);
  for (const ComputeSpan& s : d.compute) out += fmt::format("compute '{}' {} {} {}\n", s.name, s.start_ns, s.end_ns, s.lane);
  for (const CommEvent& c : d.comm) {
    out += fmt::format("comm '{}' {} {} {} {} '{}' '{}' {} {}\n", c.name, c.start_ns, c.end_ns, c.bytes, c.wire_bytes,
                       c.algorithm, c.codec, c.lane, c.failed);
  }
  for (const Mark& m : d.marks) out += fmt::format("mark '{}' {} {}\n", m.name, m.at_ns, m.lane);
  for (const StepBoundary& s : d.steps) out += fmt::format("step {} {}\n", s.step, s.start_ns);
  for (const LaneName& l : d.lane_names) out += fmt::format("lane {} '{}'\n", l.lane, l.name);
  return out;
}

std::vector<TraceData> read(const std::string& text, const char* what) {
  std::vector<TraceData> ranks;
  fuzz::succeeds(what, {ErrorKind::kCorrupt}, [&] { ranks = read_trace_text(text, "fuzz.json"); });
  return ranks;
}

TraceData write_and_read(const TraceData& data, const char* what) {
  std::vector<TraceData> again = read(to_chrome_trace_json(data), what);
  require(again.size() == 1, what, "a rank written by to_chrome_trace_json did not read back as one rank");
  return again[0];
}

void check_rank(const TraceData& first) {
  (void)step_counters(first);  // what `braid-trace summary` prints
  TraceData second = write_and_read(first, "reading a written trace");
  require(second.compute.size() == first.compute.size() && second.comm.size() == first.comm.size() &&
              second.marks.size() == first.marks.size() && second.steps.size() == first.steps.size(),
          "writing and reading a trace lost or added events");
  TraceData third = write_and_read(second, "reading a trace written twice");
  require(describe(third) == describe(second), "a trace written and read twice changed", describe(second));
}

}  // namespace
}  // namespace braid::trace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "trace_reader_fuzz";
  braid::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const braid::trace::TraceData& rank : braid::trace::read(std::string(braid::fuzz::as_text(data, size)), "read_trace_text")) {
    braid::trace::check_rank(rank);
  }
  return 0;
}
