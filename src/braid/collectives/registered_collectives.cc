// The zero-copy paths of allgather, broadcast and reduce_scatter on registered memory
// (docs/registered-memory.md; allreduce's is allreduce_registered.cc). Each is taken by the
// operation's shm_direct algorithm after post_call, when the buffers it needs are registered on
// every rank (the same decision on every rank: it reads every rank's posted slot), and writes
// every output byte once, reading the inputs where they lie:
//
//   allgather:      rank r pushes its block into block r of every rank's recv (every recv
//                   registered; in place, MPI_IN_PLACE, skips its own copy);
//   broadcast:      every rank pulls the root's buffer into its own (the root's registered);
//   reduce_scatter: rank r reduces block r of every rank's send, in rank order, straight into
//                   its recv (every send registered, and no rank's recv overlapping its send:
//                   in place, rank r's result would land where rank 0 still reads).
//
// Then one synchronisation, so that no rank leaves (and reuses a buffer) while a peer still
// reads or writes it.
#include <cstring>
#include <vector>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

namespace {

void finish(ShmWorkspace& ws, std::uint64_t call) {
  ws.publish(ShmPhase::kGathered, call);
  ws.wait_for_peers(ShmPhase::kGathered, call, ws.deadline());
}


}  // namespace

bool allgather_registered_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  if (!ws.registered_everywhere(call, /*send=*/false, /*recv=*/true)) return false;
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t block = a.bytes(a.count), total = block * static_cast<std::size_t>(n);
  const CopyFunction copy_out = copy_for_output(total, n);
  const std::size_t at = block * static_cast<std::size_t>(r);
  for (int q = 0; q < n; ++q) {
    std::byte* recv = q == r ? a.recv : ws.registered_buffer(q, call, /*recv=*/true, total);
    if (recv + at != a.send) copy_out(recv + at, a.send, block);
  }
  finish(ws, call);
  return true;
}

bool broadcast_registered_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  if (ws.posted_registrations(a.root, call).recv.arena == 0) return false;
  const std::size_t bytes = a.bytes(a.count);
  if (a.comm.rank() != a.root) {
    const std::byte* data = ws.registered_buffer(a.root, call, /*recv=*/true, bytes);
    copy_for_output(bytes, a.comm.size())(a.recv, data, bytes);
  }
  finish(ws, call);
  return true;
}

bool reduce_scatter_registered_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t block = a.bytes(a.count), total = block * static_cast<std::size_t>(n);
  if (!ws.registered_everywhere(call, /*send=*/true, /*recv=*/false)) return false;
  for (int q = 0; q < n; ++q) {
    if (send_overlaps_recv(ws.posted_registrations(q, call), total, block)) return false;
  }
  std::vector<const std::byte*> in(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) {
    const std::byte* send = q == r ? a.send : ws.registered_buffer(q, call, /*recv=*/false, total);
    in[static_cast<std::size_t>(q)] = send + block * static_cast<std::size_t>(r);
  }
  reduce_in_rank_order(a.recv, n, [&](int q) { return in[static_cast<std::size_t>(q)]; }, a.count, a.dtype,
                       a.reduce_op);
  finish(ws, call);
  return true;
}

}  // namespace braid::algorithms
