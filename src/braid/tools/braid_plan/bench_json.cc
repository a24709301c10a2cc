#include "bench_json.h"

#include <algorithm>
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

// Reads one calibrate -o file, every complaint naming the flag, the file and the field.
class ModelReader {
 public:
  ModelReader(const std::string& path, std::string_view flag) : path_(path), flag_(flag) {}

  [[noreturn]] void bad(const std::string& why) const {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("{}: '{}' is not a braid-plan calibrate -o file ({})", flag_, path_, why));
  }

  std::string text(const nlohmann::json& object, const char* key, const std::string& where) const {
    if (!object.contains(key) || !object[key].is_string()) bad(fmt::format("{}.{} is missing or not a string", where, key));
    return object[key].get<std::string>();
  }

  double number(const nlohmann::json& object, const char* key, const std::string& where) const {
    if (!object.contains(key) || !object[key].is_number()) bad(fmt::format("{}.{} is missing or not a number", where, key));
    const double value = object[key].get<double>();
    if (!(value >= 0)) bad(fmt::format("{}.{} = {} must be >= 0", where, key, value));
    return value;
  }

  std::vector<int> ranks(const nlohmann::json& fit, const std::string& where) const {
    std::vector<int> out;
    if (!fit.contains("ranks")) return out;  // written before the field existed
    if (!fit["ranks"].is_array()) bad(where + ".ranks is not an array");
    for (const nlohmann::json& n : fit["ranks"]) {
      if (!n.is_number_integer() || n.get<int>() < 2) bad(where + ".ranks holds something other than a world size >= 2");
      out.push_back(n.get<int>());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  ModelFit fit(const nlohmann::json& fit, const std::string& where) const {
    if (!fit.is_object()) bad(where + " is not an object");
    ModelFit out;
    out.label = text(fit, "algorithm", where);
    out.bench_algorithm = fit.contains("bench_algorithm") ? text(fit, "bench_algorithm", where) : out.label;
    out.ranks = ranks(fit, where);
    out.link = fit.contains("link") ? text(fit, "link", where) : "";
    Calibration& cal = out.calibration;
    const std::string field = fmt::format("{}: '{}' {}", flag_, path_, where);
    cal.op = parse_op(text(fit, "op", where), field + ".op");
    cal.algorithm = parse_algorithm(fit.contains("model") ? text(fit, "model", where) : "ring", field + ".model");
    cal.gamma = fit.contains("gamma") ? number(fit, "gamma", where) : 0;
    if (!fit.contains("segments") || !fit["segments"].is_array() || fit["segments"].empty()) {
      bad(where + ".segments is missing or empty");
    }
    for (std::size_t i = 0; i < fit["segments"].size(); ++i) {
      const nlohmann::json& s = fit["segments"][i];
      const std::string at = fmt::format("{}.segments[{}]", where, i);
      if (!s.is_object()) bad(at + " is not an object");
      cal.segments.push_back({number(s, "min_bytes", at), number(s, "max_bytes", at), number(s, "alpha", at),
                              number(s, "beta", at)});
    }
    cal.rms_relative_error = fit.contains("rms_relative_error") ? number(fit, "rms_relative_error", where) : 0;
    cal.max_relative_error = fit.contains("max_relative_error") ? number(fit, "max_relative_error", where) : 0;
    return out;
  }

 private:
  const std::string& path_;
  std::string_view flag_;
};

nlohmann::json model_fit_json(const ModelFit& fit) {
  const Calibration& cal = fit.calibration;
  nlohmann::json segments = nlohmann::json::array();
  for (const Fit& s : cal.segments) {
    segments.push_back({{"min_bytes", s.min_bytes}, {"max_bytes", s.max_bytes}, {"alpha", s.alpha}, {"beta", s.beta},
                        {"bandwidth", s.bandwidth()}});
  }
  return {{"op", std::string(op_kind_name(cal.op))}, {"algorithm", fit.label}, {"bench_algorithm", fit.bench_algorithm},
          {"ranks", fit.ranks}, {"link", fit.link}, {"model", algorithm_name(cal.algorithm)}, {"gamma", cal.gamma},
          {"segments", segments}, {"rms_relative_error", cal.rms_relative_error},
          {"max_relative_error", cal.max_relative_error}};
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

std::vector<ModelFit> read_model_file(const std::string& path, std::string_view flag) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument({.op = "braid-plan"}, fmt::format("{}: cannot open '{}'", flag, path));
  const ModelReader reader(path, flag);
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded()) reader.bad("not JSON");
  if (!doc.is_object() || !doc.contains("fits") || !doc["fits"].is_array()) reader.bad("no \"fits\" array");
  std::vector<ModelFit> fits;
  for (std::size_t i = 0; i < doc["fits"].size(); ++i) {
    fits.push_back(reader.fit(doc["fits"][i], fmt::format("fits[{}]", i)));
  }
  return fits;
}

void write_model_file(const std::string& path, const std::vector<ModelFit>& fits, std::string_view flag) {
  nlohmann::json entries = nlohmann::json::array();
  for (const ModelFit& fit : fits) entries.push_back(model_fit_json(fit));
  std::ofstream out(path);
  out << nlohmann::json{{"fits", entries}}.dump(2) << "\n";
  if (!out) throw InvalidArgument({.op = "braid-plan"}, fmt::format("{}: cannot write '{}'", flag, path));
}

}  // namespace braid::plan::cli
