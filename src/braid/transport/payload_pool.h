// braid::PayloadPool: the payload buffers of unexpected messages (matcher.h), kept for the
// next ones from the same peer instead of handed back to the allocator.
//
// A large message that arrives before its receive is posted is read into a heap buffer and
// copied out when the receive comes. Freed, a buffer of megabytes goes back to the kernel (glibc
// trims the heap or unmaps the chunk), and the next message's buffer is faulted in and zeroed
// page by page again: at 4 MiB blocks, every call of an alltoall across hosts paid that
// (docs/performance.md, "host_striped in pieces"). Collectives repeat their message sizes, so
// the pool keeps a few freed buffers and hands one back for a message that fits it.
//
// Bounded: at most kKept buffers, each at most kLargest bytes, only ones of kSmallest bytes or
// more (the allocator serves small ones well); a buffer is reused for a message of at least
// half its size, so a small message never pins a large buffer. What it keeps is what was
// already buffered at once before, so it adds no peak. Not thread-safe: the matcher's owner
// serialises it with the matcher.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace braid {

struct PayloadBuffer {
  std::unique_ptr<std::byte[]> data;
  std::size_t capacity = 0;
};

class PayloadPool {
 public:
  static constexpr std::size_t kKept = 4;
  static constexpr std::size_t kSmallest = std::size_t{64} << 10;
  static constexpr std::size_t kLargest = std::size_t{64} << 20;

  // A buffer of at least `bytes` (>= 1): a kept one that fits, or a new one (not zeroed).
  PayloadBuffer take(std::size_t bytes);
  // Keeps `buffer` for a later take(), or frees it (outside the bounds above).
  void give(PayloadBuffer buffer);
  std::size_t kept() const { return kept_.size(); }

 private:
  std::vector<PayloadBuffer> kept_;
};

}  // namespace braid
