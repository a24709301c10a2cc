#include "braid/trace/trace_json.h"

#include <functional>

#include <fmt/format.h>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"

namespace braid::trace::json_format {

namespace {

using nlohmann::json;

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw Corrupt({.op = "trace.read"}, fmt::format("{}: {}", path, what));
}

// `object[field]`, when present (or always, when `required`), must be a number in [lo, hi], an
// integer when `integer`. Compared as doubles, so that 2^64 - 1 or -2^63 are out of range
// rather than wrapped by a conversion.
struct Range {
  double lo;
  double hi;
  bool integer = true;
  bool required = false;
};

void check_field(const json& object, const char* field, Range range, const std::function<void(std::string)>& bad) {
  auto it = object.find(field);
  if (it == object.end()) {
    if (range.required) bad(fmt::format("has no {} \"{}\"", range.integer ? "integer" : "numeric", field));
    return;
  }
  const bool type_ok = range.integer ? it->is_number_integer() : it->is_number();
  if (!type_ok) bad(fmt::format("field \"{}\" is not {}", field, range.integer ? "an integer" : "a number"));
  const double value = it->get<double>();
  if (!(value >= range.lo && value <= range.hi)) {
    bad(fmt::format("field \"{}\" = {} is out of range [{}, {}]", field, it->dump(), range.lo, range.hi));
  }
}

// The fields every viewer needs: ph, pid, tid, and ts (optional only on metadata events);
// complete events need a non-negative dur; and what braid reads of args (step, bytes).
void check_event(const json& event, std::size_t index, const std::string& path) {
  auto bad = [&](const std::string& what) { corrupt(path, fmt::format("traceEvents[{}] {}", index, what)); };
  if (!event.is_object()) bad("is not an object");
  auto ph = event.find("ph");
  if (ph == event.end() || !ph->is_string()) bad("has no string \"ph\"");
  check_field(event, "pid", {0, kMaxRank, true, true}, bad);
  check_field(event, "tid", {0, kMaxLane, true, true}, bad);
  const bool metadata = ph->get<std::string>() == "M";
  check_field(event, "ts", {-kMaxTimeUs, kMaxTimeUs, false, !metadata}, bad);
  if (ph->get<std::string>() == "X") check_field(event, "dur", {0, kMaxTimeUs, false, true}, bad);
  auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return;
  auto cat_field = event.find("cat");
  const std::string cat = cat_field != event.end() && cat_field->is_string() ? cat_field->get<std::string>() : "";
  auto bad_arg = [&](const std::string& what) { bad("args " + what); };
  if (cat == kCatStep) check_field(*args, "step", {0, kMaxStep}, bad_arg);
  if (cat == kCatComm) {
    check_field(*args, "bytes", {0, kMaxEventBytes}, bad_arg);
    check_field(*args, "wire_bytes", {0, kMaxEventBytes}, bad_arg);
  }
}

// What the reader and the merger take from a rank's entry in otherData (or in a merged
// trace's otherData.ranks).
void check_rank_entry(const json& entry, const std::string& where, const std::string& path) {
  auto bad = [&](const std::string& what) { corrupt(path, fmt::format("{} {}", where, what)); };
  if (!entry.is_object()) bad("is not an object");
  check_field(entry, "rank", {0, kMaxRank}, bad);
  check_field(entry, "clock_system_ns", {0, kMaxInt64Field}, bad);
  check_field(entry, "dropped_events", {0, kMaxInt64Field}, bad);
}

void check_other_data(const json& other, const std::string& path) {
  auto merged = other.find("merged");
  if (merged != other.end() && !merged->is_boolean()) corrupt(path, "otherData field \"merged\" is not a boolean");
  if (merged == other.end() || !merged->get<bool>()) return check_rank_entry(other, "otherData", path);
  auto ranks = other.find("ranks");
  if (ranks == other.end() || !ranks->is_array()) corrupt(path, "otherData.ranks of a merged trace is not an array");
  for (std::size_t i = 0; i < ranks->size(); ++i) check_rank_entry((*ranks)[i], fmt::format("otherData.ranks[{}]", i), path);
}

}  // namespace

json parse_braid_trace(const std::string& text, const std::string& path) {
  json trace;
  try {
    trace = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number past a double (1e999)
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
  // As int64: a version past INT_MAX must not wrap into the accepted range.
  std::int64_t version = (*other)[kVersionKey].get<std::int64_t>();
  if (version < 1 || version > kVersion) {
    corrupt(path, fmt::format("braid trace format {} (this braid reads 1 to {})", version, kVersion));
  }
  check_other_data(*other, path);
  const json& events = trace["traceEvents"];
  for (std::size_t i = 0; i < events.size(); ++i) check_event(events[i], i, path);
  return trace;
}

json load_braid_trace(const std::string& path) { return parse_braid_trace(read_whole_file(path), path); }

bool is_merged(const json& trace) { return trace["otherData"].value("merged", false); }

}  // namespace braid::trace::json_format
