#include "braid/base/fault_spec.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

constexpr std::string_view kVariable = "BRAID_FAULT";
constexpr std::string_view kGrammar = "rank=R,op=OP,nth=N,kind=kill|freeze|stall:SECONDS|flip|close";

[[noreturn]] void refuse(std::string_view text, const std::string& why) {
  throw InvalidArgument({.op = "fault injection"},
                        fmt::format("{}='{}': {} (expected {})", kVariable, text, why, kGrammar));
}

template <class T>
std::optional<T> parse_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// "key=value,key=value" into a map; refuses empty items, items without '=' and repeated keys.
std::map<std::string, std::string, std::less<>> split_fields(std::string_view text) {
  std::map<std::string, std::string, std::less<>> fields;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos || eq == 0) {
      refuse(text, fmt::format("'{}' is not key=value", item));
    }
    std::string key(item.substr(0, eq));
    if (!fields.emplace(key, std::string(item.substr(eq + 1))).second) refuse(text, fmt::format("'{}' given twice", key));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

OpKind parse_fault_op(std::string_view text, const std::string& name) {
  if (name == "send") return OpKind::kSendRecv;
  std::optional<OpKind> op = find_op_kind(name);
  if (!op || *op == OpKind::kSendRecv || *op == OpKind::kBarrier || *op == OpKind::kSplit) {
    refuse(text, fmt::format("op '{}' is neither a collective nor send", name));
  }
  return *op;
}

void parse_kind(std::string_view text, const std::string& kind, FaultSpec& spec) {
  static const std::map<std::string, FaultKind, std::less<>> kinds{
      {"kill", FaultKind::kKill}, {"freeze", FaultKind::kFreeze}, {"flip", FaultKind::kFlip},
      {"close", FaultKind::kClose}};
  if (auto it = kinds.find(kind); it != kinds.end()) {
    spec.kind = it->second;
    return;
  }
  if (kind.starts_with("stall:")) {
    std::optional<double> seconds = parse_number<double>(std::string_view(kind).substr(6));
    if (!seconds || !std::isfinite(*seconds) || *seconds <= 0) {
      refuse(text, fmt::format("stall needs a positive number of seconds, got '{}'", kind.substr(6)));
    }
    spec.kind = FaultKind::kStall;
    spec.stall_seconds = *seconds;
    return;
  }
  refuse(text, fmt::format("unknown kind '{}'", kind));
}

}  // namespace

FaultSpec parse_fault_spec(std::string_view text) {
  auto fields = split_fields(text);
  for (const auto& [key, value] : fields) {
    if (key != "rank" && key != "op" && key != "nth" && key != "kind") refuse(text, fmt::format("unknown key '{}'", key));
  }
  for (std::string_view required : {"rank", "op", "kind"}) {
    if (!fields.contains(required)) refuse(text, fmt::format("'{}' is missing", required));
  }
  FaultSpec spec;
  std::optional<int> rank = parse_number<int>(fields.at("rank"));
  if (!rank || *rank < 0) refuse(text, fmt::format("rank must be an integer >= 0, got '{}'", fields.at("rank")));
  spec.rank = *rank;
  spec.op = parse_fault_op(text, fields.at("op"));
  if (auto nth = fields.find("nth"); nth != fields.end()) {
    std::optional<std::int64_t> n = parse_number<std::int64_t>(nth->second);
    if (!n || *n < 1) refuse(text, fmt::format("nth must be an integer >= 1, got '{}'", nth->second));
    spec.nth = *n;
  }
  parse_kind(text, fields.at("kind"), spec);
  return spec;
}

std::string fault_kind_name(const FaultSpec& spec) {
  switch (spec.kind) {
    case FaultKind::kKill: return "kill";
    case FaultKind::kFreeze: return "freeze";
    case FaultKind::kStall: return fmt::format("stall:{}", spec.stall_seconds);
    case FaultKind::kFlip: return "flip";
    case FaultKind::kClose: return "close";
  }
  return "unknown";
}

std::string describe(const FaultSpec& spec) {
  std::string_view op = spec.op == OpKind::kSendRecv ? std::string_view("send") : op_kind_name(spec.op);
  return fmt::format("rank={},op={},nth={},kind={}", spec.rank, op, spec.nth, fault_kind_name(spec));
}

}  // namespace braid
