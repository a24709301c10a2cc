#include "memcpy_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "braid/comm/scratch_buffer.h"

namespace braid::bench {

namespace {

// Median GB/s of `repeats` copies of `bytes`; `before_each` runs untimed before every copy.
template <typename BeforeEach>
double median_copy_gbs(std::size_t bytes, int repeats, BeforeEach before_each) {
  ScratchBuffer source, target;  // pre-faulted, huge-page backed where the kernel allows
  std::byte* src = source.get(bytes);
  std::byte* dst = target.get(bytes);
  std::memset(src, 1, bytes);
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    before_each();
    auto start = std::chrono::steady_clock::now();
    std::memcpy(dst, src, bytes);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    src[i % bytes] = dst[(i * 7) % bytes];  // keep the copies observable
  }
  std::nth_element(seconds.begin(), seconds.begin() + repeats / 2, seconds.end());
  return static_cast<double>(bytes) / seconds[static_cast<std::size_t>(repeats / 2)] / 1e9;
}

}  // namespace

double measure_memcpy_gbs(std::size_t bytes, int repeats) {
  return median_copy_gbs(bytes, repeats, [] {});
}

double measure_concurrent_memcpy_gbs(Communicator& comm, std::size_t bytes, int repeats) {
  double gbs = median_copy_gbs(bytes, repeats, [&] { comm.barrier(); });
  allreduce(comm, &gbs, &gbs, 1, DType::kF64, ReduceOp::kAvg, {.algorithm = "recursive_doubling"});
  return gbs;
}

std::string one_thread_memcpy_line(double gbs) {
  return fmt::format("memcpy (one thread, {} MiB, median of {}): {:.2f} GB/s", kProbeBytes >> 20, kProbeRepeats, gbs);
}

std::string every_rank_memcpy_line(double gbs_per_rank) {
  return fmt::format("memcpy (every rank at once, {} MiB each, median of {}): {:.2f} GB/s per rank", kProbeBytes >> 20,
                     kProbeRepeats, gbs_per_rank);
}

}  // namespace braid::bench
