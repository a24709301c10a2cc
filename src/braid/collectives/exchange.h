// The step shared by the pairwise and ring algorithms: receive from one peer while sending to
// another (possibly the same). The receive is posted first so an arriving message lands in
// place instead of being buffered as unexpected; both are waited on before the buffers are
// reused. Envelopes carry the real element counts, so ranks that disagree raise Mismatch.
#pragma once

#include <vector>

#include "braid/collectives/collective_args.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

inline void exchange(const CollectiveArgs& a, const std::byte* out, std::int64_t out_count, int to, std::byte* in,
                     std::int64_t in_count, int from) {
  Work received = detail::CollectiveAccess(a.comm).post_collective_recv(in, a.envelope(in_count), from);
  Work sent = detail::CollectiveAccess(a.comm).post_collective_send(out, a.envelope(out_count), to);
  received.wait();
  sent.wait();
}

// Waits for every transfer of a step posted as a batch (rethrows the first failure).
inline void wait_all(std::vector<Work>& works) {
  for (Work& work : works) work.wait();
}

// Address of block `index` of `count` elements in `base`.
inline std::byte* block_at(const CollectiveArgs& a, std::byte* base, std::int64_t index) {
  return base + static_cast<std::size_t>(index) * a.bytes(a.count);
}
inline const std::byte* block_at(const CollectiveArgs& a, const std::byte* base, std::int64_t index) {
  return base + static_cast<std::size_t>(index) * a.bytes(a.count);
}

}  // namespace braid::algorithms
