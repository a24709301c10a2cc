// Shared-memory direct allgather, for communicators whose ranks all share one host: in rounds,
// every rank copies the next chunk of its own block into its workspace once and copies every
// peer's chunk out once, instead of forwarding blocks hop by hop through the shm transport's
// rings (two copies per hop). Each rank's staging area (shm_workspace.h) is split into two
// halves that alternate by round, so a rank fills one while its peers still read the other.
//
//   every rank: wait until every peer has read the round that last used this half (g-2),
//               copy its chunk g in, publish "staged g";
//               wait for every peer's "staged g", copy their chunks out, publish "read g"
//
// At the end every rank waits until every peer has read its last chunk, so that the next
// collective finds the workspace free (the invariant the shared-memory algorithms share).
// Every rank ends with the same n blocks.
#include <algorithm>
#include <cstring>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

bool allgather_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void allgather_shm_direct(const CollectiveArgs& a) {
  a.comm.fabric().throw_if_poisoned();
  ShmWorkspace& ws = a.comm.attachment<ShmWorkspace>(a.comm, a.op, a.seq);
  ws.post_call(a, nullptr);
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t half = (static_cast<std::size_t>(n) * ws.slice_bytes() / 2) / a.elem() * a.elem();
  const std::int64_t chunk = static_cast<std::int64_t>(half / a.elem());
  const std::int64_t rounds = (a.count + chunk - 1) / chunk;
  const std::uint64_t base = ws.begin(a.op, a.seq);
  const Deadline deadline = ws.deadline();
  const CopyFunction copy_out = copy_for_output(a.bytes(a.count) * static_cast<std::size_t>(n));
  std::uint64_t g = base;
  for (std::int64_t k = 0; k < rounds; ++k) {
    g = base + static_cast<std::uint64_t>(k) + 1;
    const std::int64_t first = k * chunk, m = std::min(chunk, a.count - first);
    const std::size_t at = (g % 2) * half;
    auto block = [&](int q) { return a.recv + a.bytes(static_cast<std::int64_t>(q) * a.count + first); };
    if (g >= base + 3) ws.wait_for_peers(ShmPhase::kReduced, g - 2, deadline);
    std::memcpy(ws.staging(r) + at, block(r), a.bytes(m));
    ws.publish(ShmPhase::kStaged, g);
    ws.wait_for_peers(ShmPhase::kStaged, g, deadline);
    for (int q = 0; q < n; ++q) {
      if (q != r) copy_out(block(q), ws.staging(q) + at, a.bytes(m));
    }
    ws.publish(ShmPhase::kReduced, g);
    if (k == 0) ws.unlink_once();
  }
  ws.wait_for_peers(ShmPhase::kReduced, g, deadline);
  ws.end(static_cast<std::uint64_t>(rounds));
}

}  // namespace braid::algorithms
