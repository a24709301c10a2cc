#include "braid/trace/trace_merge.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/trace/trace_json.h"

namespace braid::trace {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
namespace jf = json_format;

[[noreturn]] void invalid(const std::string& what) { throw InvalidArgument({.op = "trace.merge"}, what); }

// A directory's braid-trace-rank<R>.json files, by rank. The error_code forms of the
// filesystem calls: a directory that cannot be listed is a braid::SystemError, not a
// std::filesystem::filesystem_error.
std::vector<std::string> trace_files_in(const fs::path& dir) {
  static const std::regex kName(R"(braid-trace-rank(\d+)\.json)");
  std::map<long long, std::string> by_rank;
  std::error_code list_error;
  for (fs::directory_iterator it(dir, list_error), last; !list_error && it != last; it.increment(list_error)) {
    const fs::directory_entry& entry = *it;
    std::smatch m;
    std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (!entry.is_regular_file(type_ec) || !std::regex_match(name, m, kName)) continue;
    long long rank = 0;
    const std::string digits = m[1];
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (ec != std::errc()) invalid(fmt::format("{}: the rank in the file name is too large", entry.path().string()));
    by_rank[rank] = entry.path().string();
  }
  if (list_error) {
    throw SystemError({.op = "trace.merge"}, fmt::format("listing {}: {}", dir.string(), list_error.message()));
  }
  if (by_rank.empty()) invalid(fmt::format("{}: no braid-trace-rank<R>.json files in this directory", dir.string()));
  std::vector<std::string> files;
  for (auto& [rank, path] : by_rank) files.push_back(path);
  return files;
}

// One input file, parsed, with what the merge needs from its otherData.
struct RankInput {
  std::string file;
  json trace;
  int rank = 0;
  std::int64_t system_ns = 0;
  std::int64_t steady_ns = 0;
  std::string hostname;
};

RankInput load_rank_input(const std::string& file) {
  RankInput in{.file = file, .trace = jf::load_braid_trace(file)};
  if (jf::is_merged(in.trace)) invalid(fmt::format("{}: already a merged trace; merge the per-rank files", file));
  const json& other = in.trace["otherData"];
  if (!other.contains("rank") || !other["rank"].is_number_integer() || !other.contains("clock_system_ns") ||
      !other["clock_system_ns"].is_number_integer()) {
    throw Corrupt({.op = "trace.merge"}, fmt::format("{}: otherData lacks an integer rank and clock_system_ns", file));
  }
  try {
    in.rank = other["rank"].get<int>();
    in.system_ns = other["clock_system_ns"].get<std::int64_t>();
    in.steady_ns = other.value("clock_steady_ns", std::int64_t{0});
    in.hostname = other.value("hostname", "");
  } catch (const json::exception& e) {
    // A field of another type (e.g. a numeric hostname): not what braid wrote.
    throw Corrupt({.op = "trace.merge"}, fmt::format("{}: malformed braid trace ({})", file, e.what()));
  }
  return in;
}

std::vector<RankInput> load_inputs(const std::vector<std::string>& files) {
  std::vector<RankInput> inputs;
  std::map<int, std::string> seen;
  for (const std::string& file : files) {
    RankInput in = load_rank_input(file);
    auto [it, fresh] = seen.emplace(in.rank, file);
    if (!fresh) invalid(fmt::format("rank {} appears in both {} and {}", in.rank, it->second, file));
    inputs.push_back(std::move(in));
  }
  std::sort(inputs.begin(), inputs.end(), [](const RankInput& a, const RankInput& b) { return a.rank < b.rank; });
  return inputs;
}

// Appends `in`'s events shifted by `offset_us`, as process `in.rank`; returns how many.
std::size_t append_shifted(const RankInput& in, double offset_us, json& events) {
  for (json e : in.trace["traceEvents"]) {
    e["pid"] = in.rank;
    if (e["ph"] != "M") e["ts"] = e["ts"].get<double>() + offset_us;
    events.push_back(std::move(e));
  }
  return in.trace["traceEvents"].size();
}

json merged_other_data(const std::vector<RankInput>& inputs, const MergeSummary& summary) {
  json ranks = json::array();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const json& other = inputs[i].trace["otherData"];
    ranks.push_back({{"rank", inputs[i].rank}, {"file", inputs[i].file}, {"hostname", inputs[i].hostname},
                     {"offset_us", summary.ranks[i].offset_us},
                     {"clock_system_ns", inputs[i].system_ns},
                     {"clock_steady_ns", inputs[i].steady_ns},
                     {"dropped_events", other.value("dropped_events", std::uint64_t{0})}});
  }
  return {{jf::kVersionKey, jf::kVersion},
          {"merged", true},
          {"ranks", std::move(ranks)},
          {"clock_alignment",
           "each rank shifted by its system-clock anchor minus the earliest rank's; exact to the "
           "hosts' clock synchronisation"}};
}

}  // namespace

std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& inputs) {
  if (inputs.empty()) invalid("no input trace files");
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      for (std::string& f : trace_files_in(input)) files.push_back(std::move(f));
    } else if (fs::exists(input, ec)) {
      files.push_back(input);
    } else {
      invalid(fmt::format("{}: no such file or directory", input));
    }
  }
  return files;
}

MergeSummary merge_trace_files(const std::vector<std::string>& inputs, const std::string& output) {
  std::vector<RankInput> ranks = load_inputs(expand_trace_inputs(inputs));
  std::int64_t origin = ranks.front().system_ns;
  for (const RankInput& r : ranks) origin = std::min(origin, r.system_ns);

  MergeSummary summary;
  json events = json::array();
  for (const RankInput& r : ranks) {
    double offset_us = jf::ns_to_us(r.system_ns - origin);
    summary.events += append_shifted(r, offset_us, events);
    summary.ranks.push_back({.rank = r.rank, .file = r.file, .hostname = r.hostname, .offset_us = offset_us});
    summary.several_hosts = summary.several_hosts || r.hostname != ranks.front().hostname;
  }
  json merged = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"},
                 {"otherData", merged_other_data(ranks, summary)}};
  write_file_atomically(output, jf::dump(merged) + "\n");
  return summary;
}

}  // namespace braid::trace
