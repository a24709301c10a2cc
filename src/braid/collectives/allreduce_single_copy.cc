// Note [Single-copy collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The staged shared-memory path copies every input into the workspace before a peer can read
// it, and every result out of it: two copies of each byte beside the reduction. Registered
// memory (allreduce_registered.cc) removes both, but only for buffers the caller allocated
// with alloc_registered; the gradients of PyTorch's DDP, a user's std::vector and most other
// buffers live on the private heap, which another process cannot map. Linux can still copy out
// of another process's private memory, and into it, in one step (process_vm_readv /
// process_vm_writev, "Cross Memory Attach": transport/shm/cross_memory.h), as Open MPI's vader
// BTL does for large messages. post_call posts every rank's send and recv addresses; then,
// for allreduce, the registered path's pattern with system calls instead of loads and stores:
//
//   rank r reduces block r (ring::block) chunk by chunk: it reads the chunk of each peer's
//   send straight out of that peer's process into its own staging slice for the peer (one
//   copy, into the caches), reduces the n contributions in rank order into a scratch slice,
//   writes the result into its own recv and pushes it into every peer's recv (one copy each,
//   from the caches); then one synchronisation, so that the call ends with every recv
//   complete and no rank leaves (and reuses its buffers) while a peer still reads or writes
//   them.
//
// Per byte: its reducer reads it once from each rank's send and writes it once into each
// rank's recv, against the staged path's extra copy into the workspace and out of it (a first
// version read the reduced blocks back in a second phase: 10-20% faster than staging at 4 MiB,
// slower at 64 MiB; docs/performance.md). Every block is reduced by one rank in rank order, so
// all ranks hold the same bytes, and the same bytes as the staged path. In place is safe:
// block r of every buffer is touched by rank r alone, each chunk read on every rank before any
// rank's copy of it is written; post_call has already waited until every rank entered the
// call, so every send is ready and no recv is still in use.
//
// The algorithm "single_copy" (the tuner's rule on one host from 16 KiB at 2 ranks, from 128
// KiB at more). Every rank probed at the workspace's set-up whether the kernel lets it read
// every peer, and BRAID_CROSS_MEMORY=0 on any rank answers no for it (ShmWorkspace::single_copy
// is the agreement: the same on every rank, whatever the environment of each); where the
// answer is no, the call takes shm_direct's staged rounds, and where every buffer is
// registered, the zero-copy path.
#include <algorithm>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

void allreduce_single_copy_on(const CollectiveArgs& a, ShmWorkspace& ws, std::uint64_t call) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t slice = ws.slice_bytes();  // the staging slots' spacing
  const std::int64_t chunk = static_cast<std::int64_t>(ws.chunk_bytes() / a.elem());
  const CopyFunction write_out = copy_for_output(a.bytes(a.count), n);
  const std::size_t total = a.bytes(a.count);
  const ring::Block mine = ring::block(a.count, n, r);
  std::byte* scratch = ws.result(r);  // this rank's own slices: no peer reads them on this path
  auto staged = [&](int q) { return ws.staging(r) + static_cast<std::size_t>(q) * slice; };
  for (std::int64_t first = mine.offset; first < mine.offset + mine.count; first += chunk) {
    const std::int64_t m = std::min(chunk, mine.offset + mine.count - first);
    const std::size_t at = a.bytes(first), bytes = a.bytes(m);
    for (int q = 0; q < n; ++q) {
      if (q != r) ws.read_posted(q, call, /*recv=*/false, total, at, staged(q), bytes);
    }
    reduce_in_rank_order(scratch, n, [&](int q) { return q == r ? a.send + at : staged(q); }, m, a.dtype, a.reduce_op);
    write_out(a.recv + at, scratch, bytes);
    for (int q = 0; q < n; ++q) {
      if (q != r) ws.write_posted(q, call, /*recv=*/true, total, at, scratch, bytes);
    }
  }
  ws.publish(ShmPhase::kGathered, call);
  ws.wait_for_peers(ShmPhase::kGathered, call, ws.deadline());
}

bool allreduce_single_copy_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void allreduce_single_copy(const CollectiveArgs& args) { allreduce_on_host(args, /*single_copy=*/true); }

}  // namespace braid::algorithms
