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
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

bool allgather_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void allgather_shm_direct(const CollectiveArgs& a) {
  detail::CollectiveAccess access(a.comm);
  access.fabric().throw_if_poisoned();
  ShmWorkspace& ws = access.attachment<ShmWorkspace>(a.comm, a.op, a.seq);
  const int n = a.comm.size(), r = a.comm.rank();
  const std::uint64_t call = ws.post_call_registered(a, a.bytes(a.count), a.bytes(a.count) * static_cast<std::size_t>(n));
  if (allgather_registered_on(a, ws, call)) return;  // every recv registered: pushed in place
  if (allgather_single_copy_on(a, ws, call)) return;  // read out of the peers' processes
  const std::size_t half = (static_cast<std::size_t>(n) * ws.slice_bytes() / 2) / a.elem() * a.elem();
  const std::int64_t chunk = static_cast<std::int64_t>(half / a.elem());
  const std::int64_t rounds = (a.count + chunk - 1) / chunk;
  ws.begin(a.op, a.seq);
  const CopyFunction copy_out = copy_for_output(a.bytes(a.count) * static_cast<std::size_t>(n), n);
  auto piece = [&](std::int64_t k) { return std::min(chunk, a.count - k * chunk); };
  auto block = [&](int q, std::int64_t k) { return a.recv + a.bytes(static_cast<std::int64_t>(q) * a.count + k * chunk); };
  ws.exchange_rounds(
      rounds, half, [&](std::int64_t k, std::size_t at) { std::memcpy(ws.staging(r) + at, block(r, k), a.bytes(piece(k))); },
      [&](std::int64_t k, std::size_t at) {
        for (int q = 0; q < n; ++q) {
          if (q != r) copy_out(block(q, k), ws.staging(q) + at, a.bytes(piece(k)));
        }
      });
}

}  // namespace braid::algorithms
