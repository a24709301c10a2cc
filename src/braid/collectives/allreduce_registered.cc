// The zero-copy allreduce on registered memory (docs/registered-memory.md): taken by
// allreduce shm_direct when every rank's send and recv lie in registered memory
// (ShmWorkspace::registered_everywhere, the same answer on every rank since it reads every
// rank's posted slot). Nothing is staged:
//
//   rank r reduces block r (ring::block) reading every rank's send in place, in rank order,
//   chunk by chunk into a cache-sized scratch (its workspace's result slice), and writes each
//   reduced chunk straight into every rank's recv (push); then one synchronisation (kGathered)
//   so that the call ends with every recv complete.
//
// Per element that is n reads and n writes of user memory spread over n ranks, against the
// staged path's extra copy in and copy out through the workspace. In place (send == recv on
// some or all ranks) is safe: block r of every buffer is touched by rank r alone, and each
// chunk of it is read on every rank before any rank's copy of that chunk is written. post_call
// has already waited until every rank entered the call, so every send is ready and no recv is
// still in use.
#include <algorithm>
#include <vector>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

void allreduce_registered_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t elem = a.elem(), total = a.bytes(a.count);
  std::vector<const std::byte*> in(static_cast<std::size_t>(n));
  std::vector<std::byte*> out(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) {
    in[static_cast<std::size_t>(q)] = q == r ? a.send : ws.registered_buffer(q, call, /*recv=*/false, total);
    out[static_cast<std::size_t>(q)] = q == r ? a.recv : ws.registered_buffer(q, call, /*recv=*/true, total);
  }
  const ring::Block mine = ring::block(a.count, n, r);
  const std::int64_t chunk = static_cast<std::int64_t>(ws.chunk_bytes() / elem);
  const CopyFunction write_out = copy_for_output(total, n);
  std::byte* scratch = ws.result(r);  // this rank's alone: no peer reads it on this path
  for (std::int64_t first = mine.offset; first < mine.offset + mine.count; first += chunk) {
    const std::int64_t m = std::min(chunk, mine.offset + mine.count - first);
    const std::size_t at = a.bytes(first), bytes = a.bytes(m);
    reduce_in_rank_order(scratch, n, [&](int q) { return in[static_cast<std::size_t>(q)] + at; }, m, a.dtype,
                         a.reduce_op);
    for (int q = 0; q < n; ++q) write_out(out[static_cast<std::size_t>(q)] + at, scratch, bytes);
  }
  ws.publish(ShmPhase::kGathered, call);
  ws.wait_for_peers(ShmPhase::kGathered, call, ws.deadline());
}

}  // namespace braid::algorithms
