#include "braid/trace/trace_json.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/trace/atomic_file.h"

namespace braid::trace::json_format {

namespace {

using nlohmann::json;

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw Corrupt({.op = "trace.read"}, fmt::format("{}: {}", path, what));
}

// The fields every viewer needs: ph, pid, tid, and ts (optional only on metadata events);
// complete events need a non-negative dur.
void check_event(const json& event, std::size_t index, const std::string& path) {
  auto bad = [&](const char* what) { corrupt(path, fmt::format("traceEvents[{}] {}", index, what)); };
  if (!event.is_object()) bad("is not an object");
  auto ph = event.find("ph");
  if (ph == event.end() || !ph->is_string()) bad("has no string \"ph\"");
  if (!event.contains("pid") || !event["pid"].is_number_integer()) bad("has no integer \"pid\"");
  if (!event.contains("tid") || !event["tid"].is_number_integer()) bad("has no integer \"tid\"");
  bool metadata = ph->get<std::string>() == "M";
  if (!metadata && (!event.contains("ts") || !event["ts"].is_number())) bad("has no numeric \"ts\"");
  if (ph->get<std::string>() == "X") {
    auto dur = event.find("dur");
    if (dur == event.end() || !dur->is_number() || dur->get<double>() < 0) bad("has no \"dur\" >= 0");
  }
}

}  // namespace

json parse_braid_trace(const std::string& text, const std::string& path) {
  json trace;
  try {
    trace = json::parse(text);
  } catch (const json::parse_error& e) {
    corrupt(path, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    corrupt(path, "not a Chrome trace (no \"traceEvents\" array)");
  }
  auto other = trace.find("otherData");
  if (other == trace.end() || !other->is_object() || !other->contains(kVersionKey) ||
      !(*other)[kVersionKey].is_number_integer()) {
    corrupt(path, fmt::format("not a braid trace (no otherData.{})", kVersionKey));
  }
  int version = (*other)[kVersionKey].get<int>();
  if (version < 1 || version > kVersion) {
    corrupt(path, fmt::format("braid trace format {} (this braid reads 1 to {})", version, kVersion));
  }
  const json& events = trace["traceEvents"];
  for (std::size_t i = 0; i < events.size(); ++i) check_event(events[i], i, path);
  return trace;
}

json load_braid_trace(const std::string& path) { return parse_braid_trace(read_whole_file(path), path); }

bool is_merged(const json& trace) { return trace["otherData"].value("merged", false); }

}  // namespace braid::trace::json_format
