#include "braid/trace/chrome_trace.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/trace/step_counters.h"
#include "braid/trace/trace_json.h"

namespace braid::trace {

namespace {

using nlohmann::json;
namespace jf = json_format;

// Builds the events of one rank; every timestamp relative to the rank's clock anchor.
class EventWriter {
 public:
  explicit EventWriter(const TraceData& data) : data_(data) {}

  json ts(std::int64_t ns) const { return jf::ns_to_us(ns - data_.anchor.steady_ns); }
  int step_at(std::int64_t ns) const {
    int index = step_index_at(data_.steps, ns);
    return index < 0 ? kSetupStep : data_.steps[index].step;
  }
  json base(const char* ph, const std::string& name, int lane) const {
    return {{"ph", ph}, {"name", name}, {"pid", data_.rank}, {"tid", lane}};
  }

  json metadata(const char* kind, int lane, json args) const {
    json e = base("M", kind, lane);
    e["ts"] = 0;
    e["args"] = std::move(args);
    return e;
  }
  json compute(const ComputeSpan& span) const {
    json e = base("X", span.name, span.lane);
    e["cat"] = jf::kCatCompute;
    e["ts"] = ts(span.start_ns);
    e["dur"] = jf::ns_to_us(std::max<std::int64_t>(0, span.end_ns - span.start_ns));
    e["args"] = {{"step", step_at(span.start_ns)}};
    return e;
  }
  json comm(const CommEvent& op) const {
    json e = base("X", op.name, op.lane);
    e["cat"] = jf::kCatComm;
    e["ts"] = ts(op.start_ns);
    e["dur"] = jf::ns_to_us(std::max<std::int64_t>(0, op.end_ns - op.start_ns));
    e["args"] = {{"step", step_at(op.start_ns)}, {"bytes", op.bytes}, {"wire_bytes", op.wire_bytes},
                 {"algorithm", op.algorithm},     {"codec", op.codec}};
    if (op.failed) e["args"]["failed"] = true;
    return e;
  }
  json mark(const Mark& m) const {
    json e = base("i", m.name, m.lane);
    e["cat"] = jf::kCatMark;
    e["s"] = "t";  // thread scope: a tick on the lane's row
    e["ts"] = ts(m.at_ns);
    e["args"] = {{"step", step_at(m.at_ns)}};
    return e;
  }
  json step(const StepBoundary& b) const {
    json e = base("i", fmt::format("step {}", b.step), kComputeLane);
    e["cat"] = jf::kCatStep;
    e["s"] = "p";  // process scope: a line across all of the rank's rows
    e["ts"] = ts(b.start_ns);
    e["args"] = {{"step", b.step}};
    return e;
  }
  json counter(const char* name, std::int64_t at_ns, json args) const {
    json e = base("C", name, kComputeLane);
    e["cat"] = jf::kCatCounters;
    e["ts"] = ts(at_ns);
    e["args"] = std::move(args);
    return e;
  }

 private:
  const TraceData& data_;
};

std::set<int> lanes_of(const TraceData& data) {
  std::set<int> lanes{kComputeLane, kCommLane};
  for (const ComputeSpan& s : data.compute) lanes.insert(s.lane);
  for (const CommEvent& c : data.comm) lanes.insert(c.lane);
  for (const Mark& m : data.marks) lanes.insert(m.lane);
  for (const LaneName& n : data.lane_names) lanes.insert(n.lane);
  return lanes;
}

void add_metadata(const TraceData& data, const EventWriter& w, json& out) {
  out.push_back(w.metadata("process_name", kComputeLane, {{"name", fmt::format("rank {}", data.rank)}}));
  out.push_back(w.metadata("process_sort_index", kComputeLane, {{"sort_index", data.rank}}));
  for (int lane : lanes_of(data)) {
    out.push_back(w.metadata("thread_name", lane, {{"name", lane_label(data, lane)}}));
    out.push_back(w.metadata("thread_sort_index", lane, {{"sort_index", lane}}));
  }
}

// Three counter tracks, one value per step, set at the step's start.
void add_counters(const TraceData& data, const EventWriter& w, json& out) {
  for (const StepCounters& c : step_counters(data)) {
    out.push_back(w.counter("comm time (ms)", c.start_ns,
                            {{"comm", c.comm_ns / 1e6}, {"exposed", c.exposed_comm_ns / 1e6}}));
    out.push_back(w.counter("overlap (%)", c.start_ns, {{"overlap", 100.0 * c.overlap_ratio()}}));
    out.push_back(w.counter("wire (MiB)", c.start_ns, {{"wire", c.wire_bytes / 1048576.0}}));
  }
}

json timed_events(const TraceData& data, const EventWriter& w) {
  json events = json::array();
  for (const StepBoundary& b : data.steps) events.push_back(w.step(b));
  for (const ComputeSpan& s : data.compute) events.push_back(w.compute(s));
  for (const CommEvent& c : data.comm) events.push_back(w.comm(c));
  for (const Mark& m : data.marks) events.push_back(w.mark(m));
  add_counters(data, w, events);
  // Communication is recorded when it ends; time order makes the file readable by eye.
  std::stable_sort(events.begin(), events.end(),
                   [](const json& a, const json& b) { return a["ts"].get<double>() < b["ts"].get<double>(); });
  return events;
}

json other_data(const TraceData& data) {
  return {{jf::kVersionKey, jf::kVersion},
          {"rank", data.rank},
          {"hostname", data.hostname},
          {"clock_steady_ns", data.anchor.steady_ns},
          {"clock_system_ns", data.anchor.system_ns},
          {"dropped_events", data.dropped_events},
          {"time_origin", "ts = steady-clock microseconds since clock_steady_ns"}};
}

}  // namespace

std::string trace_file_name(int rank) { return fmt::format("braid-trace-rank{}.json", rank); }

std::string to_chrome_trace_json(const TraceData& data) {
  EventWriter writer(data);
  json events = json::array();
  add_metadata(data, writer, events);
  for (json& e : timed_events(data, writer)) events.push_back(std::move(e));
  // One event per line: the file stays greppable and diffable, and still one JSON document.
  std::string out = "{\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += jf::dump(events[i]);
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + jf::dump(other_data(data)) + "}\n";
  return out;
}

std::string write_trace_file(const TraceData& data, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // several ranks may race to create it: fine
  if (ec) throw SystemError({.rank = data.rank, .op = "trace.write"},
                            fmt::format("creating trace directory {}: {}", dir, ec.message()));
  std::string path = (std::filesystem::path(dir) / trace_file_name(data.rank)).string();
  write_file_atomically(path, to_chrome_trace_json(data));
  return path;
}

}  // namespace braid::trace
