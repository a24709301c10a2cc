#include "braid/transport/payload_pool.h"

#include <algorithm>
#include <utility>

namespace braid {

PayloadBuffer PayloadPool::take(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  // The smallest kept buffer that holds `bytes` and is not more than twice as large.
  auto best = kept_.end();
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->capacity < bytes || it->capacity / 2 > bytes) continue;
    if (best == kept_.end() || it->capacity < best->capacity) best = it;
  }
  if (best == kept_.end()) return {std::make_unique_for_overwrite<std::byte[]>(bytes), bytes};
  PayloadBuffer buffer = std::move(*best);
  kept_.erase(best);
  return buffer;
}

void PayloadPool::give(PayloadBuffer buffer) {
  if (!buffer.data || buffer.capacity < kSmallest || buffer.capacity > kLargest) return;
  if (kept_.size() == kKept) {  // make room by dropping the smallest: large ones cost most to fault in again
    auto smallest = std::min_element(kept_.begin(), kept_.end(),
                                     [](const PayloadBuffer& a, const PayloadBuffer& b) { return a.capacity < b.capacity; });
    if (smallest->capacity >= buffer.capacity) return;
    kept_.erase(smallest);
  }
  kept_.push_back(std::move(buffer));
}

}  // namespace braid
