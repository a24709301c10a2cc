// The physical limits every figure is read against, measured in the same run as the benchmark
// (the machine is shared and noisy): this host's single-thread memcpy bandwidth, and the share
// of it each rank gets when every rank copies at once.
#pragma once

#include <cstddef>

#include "braid/comm/communicator.h"

namespace braid::bench {

// Median GB/s (1e9 bytes/s) of `repeats` copies of `bytes` between pre-faulted buffers.
double measure_memcpy_gbs(std::size_t bytes = 64u << 20, int repeats = 11);

// Collective over `comm`: every rank copies `bytes` at the same moment (a barrier before each
// of `repeats` copies); returns, on every rank, the mean over ranks of each rank's median GB/s.
// Large messages cannot beat this: every rank of a collective at least reads its input and
// writes its output while its peers do the same, on the same memory bus and cores (when ranks
// outnumber cores, they also share the cores, and so the time to copy).
double measure_concurrent_memcpy_gbs(Communicator& comm, std::size_t bytes = 64u << 20, int repeats = 11);

}  // namespace braid::bench
