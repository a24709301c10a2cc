// The physical limits every figure is read against, measured in the same run as the benchmark
// (the machine is shared and noisy): this host's single-thread memcpy bandwidth, and the share
// of it each rank gets when every rank copies at once.
#pragma once

#include <cstddef>
#include <string>

#include "braid/comm/communicator.h"

namespace braid::bench {

inline constexpr std::size_t kProbeBytes = std::size_t{64} << 20;
inline constexpr int kProbeRepeats = 11;

// Median GB/s (1e9 bytes/s) of `repeats` copies of `bytes` between pre-faulted buffers.
double measure_memcpy_gbs(std::size_t bytes = kProbeBytes, int repeats = kProbeRepeats);

// Collective over `comm`: every rank copies `bytes` at the same moment (a barrier before each
// of `repeats` copies); returns, on every rank, the mean over ranks of each rank's median GB/s.
// Large messages cannot beat this: every rank of a collective at least reads its input and
// writes its output while its peers do the same, on the same memory bus and cores (when ranks
// outnumber cores, they also share the cores, and so the time to copy).
double measure_concurrent_memcpy_gbs(Communicator& comm, std::size_t bytes = kProbeBytes, int repeats = kProbeRepeats);

// The header lines naming the two figures (without the leading "# "), as every braid-bench
// table prints them and bench/compare_collectives.sh parses them.
std::string one_thread_memcpy_line(double gbs);
std::string every_rank_memcpy_line(double gbs_per_rank);

}  // namespace braid::bench
