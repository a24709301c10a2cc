#include "braid/base/env.h"

#include <array>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::env {

namespace {

constexpr std::array kBraidVariables{
    kRank,    kWorldSize, kLocalRank, kLocalWorldSize, kMasterAddr,  kMasterPort,    kJobToken, kJobId,
    kTimeout, kPeerTimeout, kTransport, kHostId,    kBindAddr,       kSpinUs,      kShmRingBytes,  kShmChunkBytes, kShmSliceBytes, kKernels, kLogLevel,
    kAlgoAllreduce, kAlgoAllgather, kAlgoReduceScatter, kAlgoBroadcast, kAlgoReduce, kAlgoGather, kAlgoScatter,
    kAlgoAlltoall, kAlgoAlltoallv, kTuningFile, kCompressHostStriped, kChecksum, kTrace,
};

constexpr std::array kForeignVariables{
    kTorchRank, kTorchWorldSize, kTorchLocalRank, kTorchLocalWorldSize, kTorchMasterAddr,
    kTorchMasterPort, kOmpiRank, kOmpiSize, kOmpiLocalRank, kOmpiLocalSize,
    kSlurmProcId, kSlurmNtasks, kSlurmLocalId, kSlurmTasksPerNode,
};

[[noreturn]] void bad_value(const Variable& var, const std::string& value, const char* expected) {
  throw InvalidArgument({.op = "env"}, fmt::format("environment variable {}='{}' is not {}", var.name, value, expected));
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

double get_double(const Variable& var) {
  std::string text = get_or_default(var);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0') bad_value(var, text, "a number");
  return value;
}

std::optional<long long> get_int_if_set(const Variable& var) {
  auto text = get(var);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || *end != '\0') bad_value(var, *text, "an integer");
  return value;
}

long long get_int(const Variable& var) {
  if (auto value = get_int_if_set(var)) return *value;
  std::string text(var.default_value);
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') bad_value(var, text, "an integer");
  return value;
}

}  // namespace braid::env
