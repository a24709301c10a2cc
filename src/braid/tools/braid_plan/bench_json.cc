#include "bench_json.h"

#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "braid/base/error.h"

namespace braid::plan::cli {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw InvalidArgument({.op = "braid-plan calibrate"}, fmt::format("{}: {}", path, why));
}

constexpr std::string_view kTimeSuffix = "(us)";

bool is_time_column(const std::string& key) {
  return key.size() > kTimeSuffix.size() && key.compare(key.size() - kTimeSuffix.size(), kTimeSuffix.size(), kTimeSuffix) == 0;
}

}  // namespace

std::vector<BenchRun> read_bench_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad(path, "cannot open it");
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) bad(path, "is not JSON (expected braid-bench --json output)");
  if (!doc.contains("rows") || !doc["rows"].is_array() || !doc.contains("benchmark")) {
    bad(path, "has no \"benchmark\" and \"rows\": not braid-bench --json output");
  }
  const nlohmann::json meta = doc.value("meta", nlohmann::json::object());
  std::string op = doc["benchmark"].get<std::string>();
  if (const std::size_t space = op.find(' '); space != std::string::npos) op = op.substr(0, space);
  const int ranks = meta.value("ranks", 0);
  if (ranks < 2) bad(path, fmt::format("meta.ranks = {}: calibration needs a run on 2 or more ranks", ranks));
  std::map<std::string, BenchRun> by_column;  // time column -> run
  for (const nlohmann::json& row : doc["rows"]) {
    if (!row.is_object() || !row.contains("size") || !row["size"].is_number()) bad(path, "a row has no numeric size");
    const double bytes = row["size"].get<double>();
    for (const auto& [key, value] : row.items()) {
      if (!is_time_column(key) || !value.is_number()) continue;  // "-": the algorithm did not run
      BenchRun& run = by_column[key];
      if (run.file.empty()) {
        run.file = path;
        run.op = op;
        run.ranks = ranks;
        run.algorithm = key == "time(us)" ? meta.value("algorithm", std::string("default"))
                                          : key.substr(0, key.size() - kTimeSuffix.size());
      }
      run.samples.push_back({bytes, ranks, value.get<double>() * 1e-6});
    }
  }
  std::vector<BenchRun> runs;
  for (auto& [key, run] : by_column) runs.push_back(std::move(run));
  if (runs.empty()) bad(path, "has no timed rows (no \"time(us)\" or \"<algorithm>(us)\" numbers)");
  return runs;
}

}  // namespace braid::plan::cli
