#include "braid/transport/shm/shm_budget.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::shm {

namespace {

constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();

std::uint64_t shm_free_bytes() {
  struct statvfs fs;
  if (::statvfs("/dev/shm", &fs) != 0) return kUnknown;
  return saturating_product(fs.f_bavail, fs.f_frsize);
}

std::uint64_t memory_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return saturating_product(kib, 1024);
  }
  return kUnknown;
}

std::string gib(std::uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1u << 30)); }

}  // namespace

MachineMemory probe_machine_memory() { return {shm_free_bytes(), memory_available_bytes()}; }

std::uint64_t shm_budget(const MachineMemory& machine) {
  return std::min(machine.shm_free_bytes, machine.memory_available_bytes) / 2;
}

std::uint64_t saturating_product(std::uint64_t count, std::uint64_t bytes_each) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(count, bytes_each, &product) ? kUnknown : product;
}

std::string check_shm_demand(const ShmDemand& d, std::uint64_t budget, const MachineMemory& machine) {
  if (d.total <= budget) return "";
  return fmt::format("{}={} needs {} bytes ({}) of shared memory on this host ({}), more than the limit of {} bytes "
                     "({}): half of what this machine can give now (/dev/shm free: {}, memory available: {}); "
                     "lower {}",
                     d.variable, d.value, d.total, gib(d.total), d.how, budget, gib(budget),
                     machine.shm_free_bytes == kUnknown ? "unknown" : gib(machine.shm_free_bytes),
                     machine.memory_available_bytes == kUnknown ? "unknown" : gib(machine.memory_available_bytes),
                     d.variable);
}

void require_shm_demand(const ShmDemand& demand, int rank, const char* op) {
  const MachineMemory machine = probe_machine_memory();
  std::string problem = check_shm_demand(demand, shm_budget(machine), machine);
  if (!problem.empty()) throw InvalidArgument({.rank = rank, .op = op}, problem);
}

}  // namespace braid::shm
