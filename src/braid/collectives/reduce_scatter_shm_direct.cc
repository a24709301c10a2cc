// Shared-memory direct reduce_scatter, for communicators whose ranks all share one host: rank
// q's result is block q of every rank's input, reduced. Shared memory is used as memory, not
// as a pipe (DESIGN.md): in rounds (ShmBlockRounds, shm_direct_steps.h), every rank
//
//   1. copies the next chunk of each block meant for a peer into its staging area (one copy in),
//   2. waits until every peer has staged, then reduces chunk k of its own block reading every
//      rank's staged copy directly (its own from `send`), in rank order, straight into recv.
//
// No copy out, and one synchronisation per round: the halves of the staging area alternate, so
// a rank stages round k+1 while its peers still reduce round k. The ring over the shm
// transport instead hands every partial block on n-1 times, and each hand-off waits for the
// neighbour: with ranks outnumbering cores (2 emulated hosts x 2 ranks on 2 cores), each costs
// a context switch, and a host's 8 MiB reduce_scatter took 25 ms over the rings against 9 ms for
// the whole-buffer shm_direct allreduce (docs/collectives.md, "Host-striped allreduce").
//
// Inputs up to ShmWorkspace::kSmallBytes (all n blocks) take the one-step path: every rank
// posts its whole input behind the call's signature and reduces block `rank` of every posted
// input itself, in rank order. Larger ones take the zero-copy path where every send is
// registered, else the single-copy path where the kernel allows it and the input is in its
// band (single_copy_collectives.cc), else the rounds below.
//
// Every element is reduced in rank order 0..n-1, so the bytes are those of any other rank's
// reduction of the same inputs, on every run. avg is summed here; the entry point divides.
// In place (send == recv: the result lands at the start of the buffer, on block 0): chunk k
// of block 0 is staged before chunk k of the result overwrites it, later rounds read only
// later chunks, and the own block read from `send` (block r) overlaps the result only on rank
// 0, where the reduction starts from it (reduce_in_rank_order reads input(0) in place).
#include <span>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

void small_reduce_scatter(const CollectiveArgs& a, ShmWorkspace& ws, std::size_t input_bytes) {
  const int n = a.comm.size(), r = a.comm.rank();
  const std::uint64_t call = ws.post_call(a, std::span<const std::byte>(a.send, input_bytes));
  auto input = [&](int q) { return block_at(a, ws.posted_input(q, call, input_bytes), r); };
  reduce_in_rank_order(a.recv, n, input, a.count, a.dtype, a.reduce_op);
}

void reduce_scatter_rounds(const CollectiveArgs& a, ShmWorkspace& ws) {
  const int n = a.comm.size(), r = a.comm.rank();
  ShmBlockRounds rounds(a, ws);
  rounds.run([&](std::int64_t k, std::size_t half) {
    const std::size_t offset = a.bytes(rounds.first(k));
    auto contribution = [&](int q) { return q == r ? block_at(a, a.send, r) + offset : rounds.staged(q, r, half); };
    reduce_in_rank_order(a.recv + offset, n, contribution, rounds.elements(k), a.dtype, a.reduce_op);
  });
}

}  // namespace

bool reduce_scatter_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void reduce_scatter_shm_direct(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  access.fabric().throw_if_poisoned();  // the small path sends no message
  ShmWorkspace& ws = access.attachment<ShmWorkspace>(args.comm, args.op, args.seq);
  const std::size_t input_bytes = args.bytes(args.count) * static_cast<std::size_t>(args.comm.size());
  if (input_bytes <= ShmWorkspace::kSmallBytes) return small_reduce_scatter(args, ws, input_bytes);
  const std::uint64_t call = ws.post_call_registered(args, input_bytes, args.bytes(args.count));
  if (reduce_scatter_registered_on(args, ws, call)) return;  // every send registered: reduced in place
  if (reduce_scatter_single_copy_on(args, ws, call)) return;  // the peers' blocks read out of their processes
  reduce_scatter_rounds(args, ws);
}

}  // namespace braid::algorithms
