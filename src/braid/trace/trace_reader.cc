#include "braid/trace/trace_reader.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/trace/trace_json.h"

namespace braid::trace {

namespace {

using nlohmann::json;
namespace jf = json_format;

const json& args_of(const json& event) {
  static const json kNoArgs = json::object();
  auto args = event.find("args");
  return args != event.end() && args->is_object() ? *args : kNoArgs;
}

void read_complete_event(const json& e, TraceData& rank) {
  std::string cat = e.value("cat", "");
  std::int64_t start = jf::us_to_ns(e["ts"].get<double>());
  std::int64_t end = start + jf::us_to_ns(e["dur"].get<double>());
  int lane = e["tid"].get<int>();
  std::string name = e.value("name", "");
  if (cat == jf::kCatCompute) {
    rank.compute.push_back({.name = name, .start_ns = start, .end_ns = end, .lane = lane});
  } else if (cat == jf::kCatComm) {
    const json& a = args_of(e);
    rank.comm.push_back({.name = name, .start_ns = start, .end_ns = end,
                         .bytes = a.value("bytes", std::uint64_t{0}),
                         .wire_bytes = a.value("wire_bytes", std::uint64_t{0}),
                         .algorithm = a.value("algorithm", ""), .codec = a.value("codec", ""),
                         .lane = lane, .failed = a.value("failed", false)});
  }
}

void read_event(const json& e, TraceData& rank) {
  std::string ph = e["ph"].get<std::string>();
  std::string cat = e.value("cat", "");
  if (ph == "X") {
    read_complete_event(e, rank);
  } else if (ph == "i" && cat == jf::kCatStep) {
    rank.steps.push_back({.step = args_of(e).value("step", 0), .start_ns = jf::us_to_ns(e["ts"].get<double>())});
  } else if (ph == "i" && cat == jf::kCatMark) {
    rank.marks.push_back({.name = e.value("name", ""), .at_ns = jf::us_to_ns(e["ts"].get<double>()),
                          .lane = e["tid"].get<int>()});
  } else if (ph == "M" && e.value("name", "") == "thread_name") {
    rank.lane_names.push_back({.lane = e["tid"].get<int>(), .name = args_of(e).value("name", "")});
  }
}

// The ranks the file declares, with their system-clock anchors, keyed by rank (= pid).
std::map<int, TraceData> declared_ranks(const json& trace) {
  const json& other = trace["otherData"];
  std::map<int, TraceData> ranks;
  auto declare = [&](const json& r) {
    TraceData d;
    d.rank = r.at("rank").get<int>();
    d.anchor.system_ns = r.value("clock_system_ns", std::int64_t{0});
    d.hostname = r.value("hostname", "");
    d.dropped_events = r.value("dropped_events", std::uint64_t{0});
    ranks[d.rank] = std::move(d);
  };
  if (jf::is_merged(trace)) {
    for (const json& r : other.at("ranks")) declare(r);
  } else {
    declare(other);
  }
  return ranks;
}

std::vector<TraceData> read_ranks(const json& trace, const std::string& path) {
  std::map<int, TraceData> ranks = declared_ranks(trace);
  for (const json& e : trace["traceEvents"]) {
    int pid = e["pid"].get<int>();
    auto rank = ranks.find(pid);
    if (rank == ranks.end()) {
      throw Corrupt({.op = "trace.read"}, fmt::format("{}: an event has pid {}, which is not a rank of this trace", path, pid));
    }
    read_event(e, rank->second);
  }
  std::vector<TraceData> result;
  for (auto& [rank, data] : ranks) {
    std::stable_sort(data.steps.begin(), data.steps.end(),
                     [](const StepBoundary& a, const StepBoundary& b) { return a.start_ns < b.start_ns; });
    result.push_back(std::move(data));
  }
  return result;
}

// read_ranks, with what nlohmann throws turned into Corrupt.
std::vector<TraceData> read_ranks_of(const json& trace, const std::string& path) {
  try {
    return read_ranks(trace, path);
  } catch (const json::exception& e) {
    // A field of the wrong type or a missing rank entry: the file is not what braid wrote.
    throw Corrupt({.op = "trace.read"}, fmt::format("{}: malformed braid trace ({})", path, e.what()));
  }
}

}  // namespace

std::vector<TraceData> read_trace_file(const std::string& path) { return read_ranks_of(jf::load_braid_trace(path), path); }

std::vector<TraceData> read_trace_text(const std::string& text, const std::string& path) {
  return read_ranks_of(jf::parse_braid_trace(text, path), path);
}

}  // namespace braid::trace
