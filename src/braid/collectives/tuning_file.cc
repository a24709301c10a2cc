#include "braid/collectives/tuning_file.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"

namespace braid {

namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 8> kRuleKeys{"op",        "algorithm", "min_bytes", "max_bytes",
                                                    "min_world", "max_world", "min_hosts", "max_hosts"};
constexpr std::array<std::string_view, 4> kTopKeys{"format", "version", "metadata", "rules"};

// Raises errors that name the file and, once set, the rule being read.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgument({.op = "tuning"}, fmt::format("tuning file '{}': {}{}", source_, where_, what));
  }
  void at_rule(std::size_t index) { where_ = fmt::format("rules[{}]: ", index); }

  template <std::size_t N>
  void check_keys(const json& object, const std::array<std::string_view, N>& allowed) const {
    for (const auto& [key, value] : object.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail(fmt::format("unknown key '{}' (expected one of: {})", key, fmt::join(allowed, ", ")));
      }
    }
  }

  // object[key] as an unsigned integer no larger than `limit`, or nullopt when absent or null.
  std::optional<std::uint64_t> bound(const json& object, const char* key, std::uint64_t limit) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() > limit) {
      fail(fmt::format("{} must be an integer in [0, {}] or null, got {}", key, limit, it->dump()));
    }
    return it->get<std::uint64_t>();
  }

  std::string text(const json& object, const char* key) const {
    auto it = object.find(key);
    if (it == object.end()) fail(fmt::format("missing \"{}\"", key));
    if (!it->is_string()) fail(fmt::format("{} must be a string, got {}", key, it->dump()));
    return it->get<std::string>();
  }

 private:
  std::string_view source_;
  std::string where_;
};

std::string algorithm_names(OpKind op) {
  std::string names;
  for (const AlgorithmEntry* entry : algorithms_for(op)) names += fmt::format("{}{}", names.empty() ? "" : ", ", entry->name);
  return names;
}

// Reads a [min_<what>, max_<what>] pair into `min` / `max`, keeping their defaults when absent.
template <class T>
void read_range(const Reader& reader, const json& object, const std::string& what, std::uint64_t limit, T& min, T& max) {
  const std::string min_key = "min_" + what;
  const std::string max_key = "max_" + what;
  if (auto value = reader.bound(object, min_key.c_str(), limit)) min = static_cast<T>(*value);
  if (auto value = reader.bound(object, max_key.c_str(), limit)) max = static_cast<T>(*value);
  if (min > max) reader.fail(fmt::format("{} {} is larger than {} {}", min_key, min, max_key, max));
}

TuningRule read_rule(const Reader& reader, const json& object) {
  if (!object.is_object()) reader.fail(fmt::format("a rule must be an object, got {}", object.dump()));
  reader.check_keys(object, kRuleKeys);
  TuningRule rule{.op = OpKind::kAllreduce};
  const std::string op = reader.text(object, "op");
  if (!parse_tunable_op(op, rule.op)) {
    reader.fail(fmt::format("unknown op '{}' (accepted: {})", op, op_kind_names(tunable_ops())));
  }
  rule.algorithm = reader.text(object, "algorithm");
  if (find_algorithm(rule.op, rule.algorithm) == nullptr) {
    reader.fail(fmt::format("unknown {} algorithm '{}' (available: {})", op, rule.algorithm, algorithm_names(rule.op)));
  }
  read_range(reader, object, "bytes", kNoByteLimit, rule.min_bytes, rule.max_bytes);
  if (!tuned_by_bytes(rule.op) && (rule.min_bytes != 0 || rule.max_bytes != kNoByteLimit)) {
    reader.fail(fmt::format("{} rules cannot bound bytes: its calls are matched by world size and host count only "
                            "(per-rank sizes differ)", op));
  }
  read_range(reader, object, "world", kNoRankLimit, rule.min_world, rule.max_world);
  read_range(reader, object, "hosts", kNoRankLimit, rule.min_hosts, rule.max_hosts);
  if (rule.min_world < 1 || rule.min_hosts < 1) reader.fail("min_world and min_hosts must be at least 1");
  return rule;
}

void check_header(const Reader& reader, const json& doc) {
  if (!doc.is_object()) reader.fail("the top level must be a JSON object");
  reader.check_keys(doc, kTopKeys);
  if (doc.contains("format") && doc["format"] != "braid-tuning") {
    reader.fail(fmt::format("format must be \"braid-tuning\", got {}", doc["format"].dump()));
  }
  if (doc.contains("version") && doc["version"] != kTuningFileVersion) {
    reader.fail(fmt::format("version {} is not supported (this braid reads version {})", doc["version"].dump(),
                            kTuningFileVersion));
  }
  if (doc.contains("metadata") && !doc["metadata"].is_object()) reader.fail("metadata must be an object");
  if (!doc.contains("rules") || !doc["rules"].is_array()) reader.fail("missing \"rules\" (an array of rules)");
}

// 0 .. limit, or null for an open bound.
json bound_json(std::uint64_t value, std::uint64_t open) { return value == open ? json(nullptr) : json(value); }

}  // namespace

TuningTable parse_tuning_json(std::string_view text, std::string_view source) {
  Reader reader(source);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number past a double (1e999)
    reader.fail(fmt::format("not valid JSON: {}", e.what()));
  }
  check_header(reader, doc);
  TuningTable table;
  const json& rules = doc["rules"];
  for (std::size_t i = 0; i < rules.size(); ++i) {
    reader.at_rule(i);
    table.rules.push_back(read_rule(reader, rules[i]));
  }
  return table;
}

TuningTable load_tuning_file(const std::string& path) {
  auto cannot_read = [&path](std::string_view why) {
    throw InvalidArgument({.op = "tuning"}, fmt::format("cannot read tuning file '{}': {}", path, why));
  };
  // A directory opens like a file and reads as nothing, which would be reported as "not valid
  // JSON": say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) cannot_read("it is a directory, not a file");
  std::ifstream in(path);
  if (!in) cannot_read(std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) cannot_read("read error");
  return parse_tuning_json(text.str(), path);
}

std::string tuning_json(const TuningTable& table, std::string_view metadata_json) {
  json metadata = json::parse(metadata_json, nullptr, /*allow_exceptions=*/false);
  if (!metadata.is_object()) throw InvalidArgument({.op = "tuning"}, "tuning file metadata must be a JSON object");
  json rules = json::array();
  for (const TuningRule& rule : table.rules) {
    rules.push_back({{"op", op_kind_name(rule.op)},
                     {"algorithm", rule.algorithm},
                     {"min_bytes", rule.min_bytes},
                     {"max_bytes", bound_json(rule.max_bytes, kNoByteLimit)},
                     {"min_world", rule.min_world},
                     {"max_world", bound_json(static_cast<std::uint64_t>(rule.max_world), kNoRankLimit)},
                     {"min_hosts", rule.min_hosts},
                     {"max_hosts", bound_json(static_cast<std::uint64_t>(rule.max_hosts), kNoRankLimit)}});
  }
  json doc = {{"format", "braid-tuning"}, {"version", kTuningFileVersion}, {"metadata", metadata}, {"rules", rules}};
  // Replaced, not thrown: an algorithm name in a hand-built table may be any bytes.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace braid
