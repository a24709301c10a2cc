#include "braid/base/env.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::env {

namespace {

constexpr std::array kBraidVariables{
    kRank,    kWorldSize, kLocalRank, kLocalWorldSize, kMasterAddr,  kMasterPort,    kJobToken, kJobId,
    kTimeout, kPeerTimeout, kTransport, kTls, kTcpStreams, kTcpBufferBytes, kHostId,    kBindAddr,       kOwnCpu,      kSpinUs,      kShmRingBytes,  kShmChunkBytes, kShmSliceBytes, kCrossMemory, kKernels, kLogLevel,
    kAlgoAllreduce, kAlgoAllgather, kAlgoReduceScatter, kAlgoBroadcast, kAlgoReduce, kAlgoGather, kAlgoScatter,
    kAlgoAlltoall, kAlgoAlltoallv, kFault, kTuningFile, kCompressHostStriped, kChecksum, kTrace, kBlasRestarted,
    kElastic, kElasticSettle, kElasticJoin,
};

constexpr std::array kForeignVariables{
    kTorchRank, kTorchWorldSize, kTorchLocalRank, kTorchLocalWorldSize, kTorchMasterAddr,
    kTorchMasterPort, kOmpiRank, kOmpiSize, kOmpiLocalRank, kOmpiLocalSize,
    kSlurmProcId, kSlurmNtasks, kSlurmLocalId, kSlurmTasksPerNode, kSlurmStepTasksPerNode, kSlurmNodeId,
    kSlurmStepNodelist, kSlurmJobNodelist, kSlurmJobId, kSlurmStepId,
};

// Integral bounds print as integers (1073741824, not 1.073741824e+09).
std::string fmt_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

std::vector<std::string_view> split_choices(std::string_view choices) {
  std::vector<std::string_view> parts;
  for (std::size_t bar; (bar = choices.find('|')) != std::string_view::npos; choices.remove_prefix(bar + 1)) {
    parts.push_back(choices.substr(0, bar));
  }
  parts.push_back(choices);
  return parts;
}

bool is_choice(std::string_view choices, std::string_view value) {
  if (choices.empty()) return false;
  for (std::string_view choice : split_choices(choices)) {
    if (choice == value) return true;
  }
  return false;
}

// "a, b or c" from "a|b|c".
std::string list_choices(std::string_view choices) {
  std::vector<std::string_view> parts = split_choices(choices);
  std::string text(parts.front());
  for (std::size_t i = 1; i < parts.size(); ++i) text += fmt::format("{}{}", i + 1 == parts.size() ? " or " : ", ", parts[i]);
  return text;
}

bool is_name(std::string_view value) {
  if (value.empty() || value.size() > 64) return false;
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::optional<double> parse_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<long long> parse_integer(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') return std::nullopt;
  return value;
}

bool integer_allowed(const Allowed& a, long long v) {
  if (static_cast<double>(v) < a.min || static_cast<double>(v) > a.max) return false;
  if (a.multiple_of != 0 && v % a.multiple_of != 0) return false;
  return !a.power_of_two || (v > 0 && (v & (v - 1)) == 0);
}

[[noreturn]] void refuse(const Variable& var, std::string_view value) {
  throw InvalidArgument({.op = "env"}, fmt::format("environment variable {}='{}' {}", var.name, value, problem(var, value)));
}

// The value or the default, refused unless allowed.
std::string checked_value(const Variable& var) {
  std::string text = get_or_default(var);
  if (!problem(var, text).empty()) refuse(var, text);
  return text;
}

}  // namespace

std::span<const Variable> braid_variables() { return kBraidVariables; }
std::span<const Variable> foreign_variables() { return kForeignVariables; }

std::optional<std::string> get(const Variable& var) {
  const char* value = std::getenv(std::string(var.name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string get_or_default(const Variable& var) {
  auto value = get(var);
  return value ? *value : std::string(var.default_value);
}

std::string describe(const Allowed& a) {
  const std::string range = fmt::format("in [{}, {}]", fmt_bound(a.min), fmt_bound(a.max));
  const std::string also = a.choices.empty() ? "" : fmt::format(", or {}", list_choices(a.choices));
  switch (a.kind) {
    case ValueKind::kText: return "any text";
    case ValueKind::kName: return "1 to 64 letters, digits or _";
    case ValueKind::kChoice: return fmt::format("one of {}", list_choices(a.choices));
    case ValueKind::kNumber: return fmt::format("a number {}{}", range, also);
    case ValueKind::kInteger:
      if (a.power_of_two) return fmt::format("a power of two {}{}", range, also);
      if (a.multiple_of != 0) return fmt::format("a multiple of {} {}{}", a.multiple_of, range, also);
      return fmt::format("an integer {}{}", range, also);
  }
  return "?";
}

std::string problem(const Variable& var, std::string_view value) {
  const Allowed& a = var.allowed;
  const std::string text(value);
  bool ok = true;
  switch (a.kind) {
    case ValueKind::kText: break;
    case ValueKind::kName: ok = is_name(value); break;
    case ValueKind::kChoice: ok = is_choice(a.choices, value); break;
    case ValueKind::kNumber: {
      auto v = parse_number(text);
      ok = is_choice(a.choices, value) || (v && *v >= a.min && *v <= a.max);
      break;
    }
    case ValueKind::kInteger: {
      auto v = parse_integer(text);
      ok = is_choice(a.choices, value) || (v && integer_allowed(a, *v));
      break;
    }
  }
  return ok ? "" : "is not " + describe(a);
}

void check(const Variable& var) {
  if (auto value = get(var); value && !problem(var, *value).empty()) refuse(var, *value);
}

void check_all() {
  for (const Variable& var : kBraidVariables) check(var);
}

double get_double(const Variable& var) {
  std::string text = checked_value(var);
  auto value = parse_number(text);
  if (!value) refuse(var, text);
  return *value;
}

std::optional<long long> get_int_if_set(const Variable& var) {
  if (!get(var)) return std::nullopt;
  return get_int(var);
}

long long get_int(const Variable& var) {
  std::string text = checked_value(var);
  auto value = parse_integer(text);
  if (!value) refuse(var, text);  // a declared extra value that is not a number
  return *value;
}

std::string get_choice(const Variable& var) { return checked_value(var); }

}  // namespace braid::env
