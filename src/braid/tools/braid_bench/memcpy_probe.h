// The physical limit every figure is read against: this host's single-thread memcpy
// bandwidth, measured in the same run as the benchmark (the machine is shared and noisy).
#pragma once

#include <cstddef>

namespace braid::bench {

// Median GB/s (1e9 bytes/s) of `repeats` copies of `bytes` between pre-faulted buffers.
double measure_memcpy_gbs(std::size_t bytes = 64u << 20, int repeats = 11);

}  // namespace braid::bench
