// The single-copy paths of allgather, alltoall and broadcast (Note [Single-copy collectives],
// allreduce_single_copy.cc): taken by each operation's shm_direct algorithm after post_call
// when ShmWorkspace::single_copy() (the same answer on every rank) and the message is in the
// band where it wins (kSingleCopyMinBytes..kSingleCopyMaxBytes), for buffers that are not
// registered on every rank. Each rank copies what it needs
// straight out of the peers' processes (process_vm_readv; a peer's registered buffer through
// its mapped arena), one copy per byte against the staged path's copy in and copy out:
//
//   allgather: rank r reads every peer q's send into block q of its recv (not when a rank's send
//              lies in its recv other than at its own block, MPI_IN_PLACE's place);
//   alltoall:  rank r reads block r of every peer q's send into block q of its recv (not when
//              any rank's send overlaps its recv: a peer would read what its owner overwrites);
//   broadcast: every rank but the root reads the root's buffer;
//   reduce_scatter: rank r reads block r of every peer's send, chunk by chunk, and reduces the
//              n contributions in rank order into its recv (not when any rank's send overlaps
//              its recv, as in place does);
//   alltoallv: rank r reads, from every peer q, the block q sends it, at the send displacement
//              q posted with its counts, or writes its block for q into q's recv, at the
//              receive displacement q posted (alltoallv_shm_direct.cc decides, from what every
//              rank posted, whether the call takes this path and which way).
//
// Then one synchronisation, so that no rank leaves (and reuses a buffer) while a peer still
// reads it. post_call has already waited until every rank entered the call.
#include <algorithm>
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

namespace {

// The messages (allgather's and alltoall's whole recv, broadcast's buffer, reduce_scatter's
// whole send) it is taken for.
// Below, the staged rounds tie: a process_vm_readv costs a system call and pins the peer's
// pages, which a small block does not amortise. From 32 MiB on, the staged rounds win again:
// the kernel copies with ordinary stores (a read for ownership of every line written) where
// the staged copies out are non-temporal, and at these sizes DRAM traffic decides
// (docs/performance.md, "Single-copy collectives (cross-memory attach)": 64 MiB broadcast on 2
// ranks 8.3 ms against 5.4 staged; 16 MiB 1.24 against 1.54).
constexpr std::size_t kSingleCopyMinBytes = 64 << 10;
constexpr std::size_t kSingleCopyMaxBytes = (32 << 20) - 1;

void finish(ShmWorkspace& ws, std::uint64_t call) {
  ws.publish(ShmPhase::kGathered, call);
  ws.wait_for_peers(ShmPhase::kGathered, call, ws.deadline());
}

// A message of `total` bytes in the band, and no rank's send (send_bytes) overlapping its recv
// (recv_bytes): a peer would read what its owner overwrites.
bool worth_it_without_overlap(const ShmWorkspace& ws, std::uint64_t call, int n, std::size_t total,
                              std::size_t send_bytes, std::size_t recv_bytes) {
  if (!single_copy_worth_it(ws, total)) return false;
  for (int q = 0; q < n; ++q) {
    if (send_overlaps_recv(ws.posted_registrations(q, call), send_bytes, recv_bytes)) return false;
  }
  return true;
}

}  // namespace

bool single_copy_large_enough(const ShmWorkspace& ws, std::size_t bytes) {
  return ws.single_copy() && bytes >= kSingleCopyMinBytes;
}

bool single_copy_worth_it(const ShmWorkspace& ws, std::size_t bytes) {
  return single_copy_large_enough(ws, bytes) && bytes <= kSingleCopyMaxBytes;
}

bool allgather_single_copy_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t block = a.bytes(a.count), total = block * static_cast<std::size_t>(n);
  if (!single_copy_worth_it(ws, total)) return false;
  // A send inside its own recv anywhere but at its block (host_striped's allgather sends from
  // the start of the buffer it gathers into) would be overwritten by its owner's reads while
  // its peers read it: such calls stage, as the staged path copies every send first.
  for (int q = 0; q < n; ++q) {
    const ShmRegistrations posted = ws.posted_registrations(q, call);
    const bool in_place = posted.send.offset == posted.recv.offset + block * static_cast<std::size_t>(q);
    if (send_overlaps_recv(posted, block, total) && !in_place) return false;
  }
  for (int q = 0; q < n; ++q) {
    std::byte* mine = a.recv + block * static_cast<std::size_t>(q);
    if (q != r) ws.read_posted(q, call, /*recv=*/false, block, 0, mine, block);
    else if (mine != a.send) std::memcpy(mine, a.send, block);
  }
  finish(ws, call);
  return true;
}

bool alltoall_single_copy_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t block = a.bytes(a.count), total = block * static_cast<std::size_t>(n);
  if (!worth_it_without_overlap(ws, call, n, total, total, total)) return false;
  std::memcpy(block_at(a, a.recv, r), block_at(a, a.send, r), block);
  for (int q = 0; q < n; ++q) {
    if (q != r) ws.read_posted(q, call, /*recv=*/false, total, block * static_cast<std::size_t>(r), block_at(a, a.recv, q), block);
  }
  finish(ws, call);
  return true;
}

bool broadcast_single_copy_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const std::size_t bytes = a.bytes(a.count);
  if (!single_copy_worth_it(ws, bytes)) return false;
  if (a.comm.rank() != a.root) ws.read_posted(a.root, call, /*recv=*/true, bytes, 0, a.recv, bytes);
  finish(ws, call);
  return true;
}

bool reduce_scatter_single_copy_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t block = a.bytes(a.count), total = block * static_cast<std::size_t>(n);
  if (!worth_it_without_overlap(ws, call, n, total, total, block)) return false;
  // Chunk by chunk of block r: every peer's chunk into this rank's staging slice for it (no
  // peer reads this rank's staging on this path), then the n contributions in rank order
  // straight into recv, as the staged rounds reduce them (the same bytes).
  const std::size_t slice = ws.chunk_bytes() / a.elem() * a.elem();
  auto staged = [&](int q) { return ws.staging(r) + static_cast<std::size_t>(q) * ws.slice_bytes(); };
  const std::byte* own = block_at(a, a.send, r);
  for (std::size_t at = 0; at < block; at += slice) {
    const std::size_t bytes = std::min(slice, block - at);
    for (int k = 1; k < n; ++k) {
      const int q = (r + k) % n;
      ws.read_posted(q, call, /*recv=*/false, total, block * static_cast<std::size_t>(r) + at, staged(q), bytes);
    }
    auto input = [&](int q) -> const std::byte* { return q == r ? own + at : staged(q); };
    reduce_in_rank_order(a.recv + at, n, input, static_cast<std::int64_t>(bytes / a.elem()), a.dtype, a.reduce_op);
  }
  finish(ws, call);
  return true;
}

void alltoallv_single_copy_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call,
                              const SingleCopyPlan& plan) {
  const int n = a.comm.size(), r = a.comm.rank();
  const AlltoallvLayout& layout = *a.layout;
  // Peers in staggered order (r + 1, r + 2, ...), so that the ranks do not all start on rank 0.
  for (int k = 1; k < n; ++k) {
    const int q = (r + k) % n;
    const std::int64_t count = plan.push ? layout.send_counts[q] : layout.recv_counts[q];
    if (count == 0) continue;
    const std::size_t at = a.bytes(plan.peer_displs[static_cast<std::size_t>(q)]), bytes = a.bytes(count);
    if (plan.push) {
      ws.write_posted(q, call, /*recv=*/true, at + bytes, at, a.send + a.bytes(layout.send_displs[q]), bytes);
    } else {
      ws.read_posted(q, call, /*recv=*/false, at + bytes, at, a.recv + a.bytes(layout.recv_displs[q]), bytes);
    }
  }
  finish(ws, call);
}

}  // namespace braid::algorithms
