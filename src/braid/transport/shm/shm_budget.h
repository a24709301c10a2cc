// How much shared memory braid lets itself take on a host. Every size setting has a sane
// maximum in its env.h declaration; this bounds what the sizes add up to by what the machine
// can give now. Segments are pre-faulted at creation (shm_segment.h), so a total the machine
// cannot give does not fail cleanly: tmpfs pages are taken until /dev/shm is full (SIGBUS) or,
// where /dev/shm is as large as RAM, until the kernel's OOM killer ends some process, possibly
// an unrelated one (BRAID_SHM_RING_BYTES=1 TiB did exactly that). Refusing up front, with the
// arithmetic in the message, is the only clean failure.
//
// The budget is half of the smaller of /dev/shm's free space and the memory the kernel says
// is available (MemAvailable): the training process needs the other half for its own model
// and buffers. It is read when a set-up starts; ranks of one host read it at slightly
// different moments, so a total right at the limit may be refused by one rank and not by
// another, which then fails on the refusing rank's report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace braid::shm {

struct MachineMemory {
  std::uint64_t shm_free_bytes;          // statvfs("/dev/shm"): blocks available x block size
  std::uint64_t memory_available_bytes;  // /proc/meminfo MemAvailable
};

// This machine now; a figure that cannot be read is UINT64_MAX (no bound from it).
MachineMemory probe_machine_memory();

// The most braid's segments of one host may take, in bytes.
std::uint64_t shm_budget(const MachineMemory& machine);

// count x bytes_each, saturating at UINT64_MAX instead of wrapping.
std::uint64_t saturating_product(std::uint64_t count, std::uint64_t bytes_each);

// What a setting asks for: `total` bytes on this host for `variable`=`value`, `how` saying
// how the total arises ("4 ranks x 4 rings of 524288 bytes").
struct ShmDemand {
  std::string_view variable;
  long long value;
  std::uint64_t total;
  std::string how;
};

// "" when the demand fits `budget`; otherwise the reason, naming the variable, its value,
// the total and the limit.
std::string check_shm_demand(const ShmDemand& demand, std::uint64_t budget, const MachineMemory& machine);

// Throws InvalidArgument (rank `rank`, op `op`) with check_shm_demand's reason, on this machine.
void require_shm_demand(const ShmDemand& demand, int rank, const char* op);

}  // namespace braid::shm
