#include "memcpy_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "braid/comm/scratch_buffer.h"

namespace braid::bench {

double measure_memcpy_gbs(std::size_t bytes, int repeats) {
  ScratchBuffer source, target;  // pre-faulted, huge-page backed where the kernel allows
  std::byte* src = source.get(bytes);
  std::byte* dst = target.get(bytes);
  std::memset(src, 1, bytes);
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(dst, src, bytes);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    src[i % bytes] = dst[(i * 7) % bytes];  // keep the copies observable
  }
  std::nth_element(seconds.begin(), seconds.begin() + repeats / 2, seconds.end());
  return static_cast<double>(bytes) / seconds[static_cast<std::size_t>(repeats / 2)] / 1e9;
}

}  // namespace braid::bench
