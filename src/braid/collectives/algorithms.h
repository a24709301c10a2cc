// Every collective algorithm, one per file named <operation>_<algorithm>.cc. Each takes the
// checked arguments of its operation (collective_args.h) and must leave bitwise-identical
// results on every rank. The registry (algorithm_registry.cc) lists them by name.
#pragma once

#include <cstdint>
#include <vector>

#include "braid/collectives/collective_args.h"

namespace braid {
class ShmWorkspace;
}  // namespace braid

namespace braid::algorithms {

// allreduce: count = elements per rank; recv = op over ranks of send, computed in place on
// recv (the entry point has copied send into it; avg not yet divided).
void allreduce_ring(const CollectiveArgs& args);
void allreduce_recursive_doubling(const CollectiveArgs& args);
void allreduce_rabenseifner(const CollectiveArgs& args);
bool allreduce_rabenseifner_supports(const CollectiveArgs& args);  // n a power of two
void allreduce_tree(const CollectiveArgs& args);
// Reads send directly (in place or not) and writes recv: the entry point does not copy first.
void allreduce_shm_direct(const CollectiveArgs& args);
bool allreduce_shm_direct_supports(const CollectiveArgs& args);  // every rank on one host, over shm
// The latency-first small-message paths (also read send directly; supports: as shm_direct).
// one_shot: every rank posts its input, every rank reduces all in rank order; one sync a round.
void allreduce_one_shot(const CollectiveArgs& args);
void allreduce_one_shot_on(const CollectiveArgs& args, ShmWorkspace& ws);  // shm_direct's small path
// shm_direct's zero-copy path, once call `call` is posted and registered on every rank.
void allreduce_registered_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
// The shared-memory allreduce of shm_direct and single_copy (allreduce_shm_direct.cc): the
// small path up to kSmallBytes, else the zero-copy path where every buffer is registered, else
// (if `single_copy` and ShmWorkspace::single_copy()) the single-copy path, else the staged
// rounds.
void allreduce_on_host(const CollectiveArgs& args, bool single_copy);
// allreduce_single_copy.cc: the peers' unregistered buffers read and written with one copy
// (process_vm_readv / process_vm_writev) where every rank may (ShmWorkspace::single_copy);
// staged otherwise. Supported where shm_direct is.
void allreduce_single_copy(const CollectiveArgs& args);
bool allreduce_single_copy_supports(const CollectiveArgs& args);
void allreduce_single_copy_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);  // after post_call
// The zero-copy paths of the other shm_direct operations (registered_collectives.cc), once
// call `call` is posted with registrations: run and return true if the buffers they need are
// registered on every rank, else return false (every rank alike) for the staged path.
bool allgather_registered_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
bool broadcast_registered_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
bool reduce_scatter_registered_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
// single_copy_collectives.cc: the same operations reading the peers' unregistered buffers out
// of their processes, where ShmWorkspace::single_copy() and the message is large enough; false
// (nothing done) otherwise.
// Whether a message of `bytes` (the whole recv, or broadcast's buffer) is in the band where
// those paths run, with single copy agreed: the same answer on every rank.
bool single_copy_worth_it(const ShmWorkspace& ws, std::size_t bytes);
// The band's lower edge only, for a path whose staged rounds lose above the band too.
bool single_copy_large_enough(const ShmWorkspace& ws, std::size_t bytes);
bool allgather_single_copy_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
bool alltoall_single_copy_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
bool broadcast_single_copy_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
bool reduce_scatter_single_copy_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call);
// alltoallv's, once its shm_direct algorithm has chosen it from what every rank posted
// (alltoallv_shm_direct.cc): pushed, this rank writes each of its blocks into its receiver's
// recv, at peer_displs[q] (elements) of rank q's; pulled, it reads each block meant for it out
// of its sender's send, at peer_displs[q] of rank q's. This rank's own block is the caller's.
struct SingleCopyPlan {
  bool push = false;
  std::vector<std::int64_t> peer_displs;
};
void alltoallv_single_copy_on(const CollectiveArgs& args, ShmWorkspace& ws, std::uint64_t call,
                              const SingleCopyPlan& plan);
// two_shot: reduce-scatter then allgather through the same slots; two syncs a round.
void allreduce_two_shot(const CollectiveArgs& args);
// Host-local reduce, allreduce among host leaders, host-local broadcast (host_groups.h).
void allreduce_hierarchical(const CollectiveArgs& args);
bool allreduce_hierarchical_supports(const CollectiveArgs& args);  // several hosts, one with several ranks
// Host-local reduce_scatter, allreduce of shard j among the ranks at position j of each host,
// host-local allgather (host_groups.h).
void allreduce_host_striped(const CollectiveArgs& args);
bool allreduce_host_striped_supports(const CollectiveArgs& args);  // several hosts, equal sizes >= 2

// reduce: count elements; send read only; recv on args.root = op over ranks of send (avg not
// yet divided), may equal send there; recv is not touched elsewhere.
void reduce_binomial(const CollectiveArgs& args);

// gather: count = elements per rank; on args.root, recv holds n blocks and already holds the
// root's own block at index root (the entry point puts it there). send is read elsewhere.
void gather_linear(const CollectiveArgs& args);
void gather_binomial(const CollectiveArgs& args);

// scatter: count = elements per rank; on args.root, send holds n blocks and the entry point
// has already copied block root into recv; elsewhere recv receives this rank's block.
void scatter_linear(const CollectiveArgs& args);
void scatter_binomial(const CollectiveArgs& args);

// allgather: count = elements per rank; recv holds n blocks and, on entry, this rank's block
// at block index rank (the entry point puts it there).
void allgather_ring(const CollectiveArgs& args);
void allgather_recursive_doubling(const CollectiveArgs& args);
bool allgather_recursive_doubling_supports(const CollectiveArgs& args);  // n a power of two
void allgather_bruck(const CollectiveArgs& args);
void allgather_shm_direct(const CollectiveArgs& args);
bool allgather_shm_direct_supports(const CollectiveArgs& args);  // every rank on one host, over shm

// reduce_scatter: count = elements per rank's result; send holds n blocks (read only, may
// equal recv); recv = block `rank` reduced over ranks (avg not yet divided).
void reduce_scatter_ring(const CollectiveArgs& args);
void reduce_scatter_recursive_halving(const CollectiveArgs& args);
bool reduce_scatter_recursive_halving_supports(const CollectiveArgs& args);  // n a power of two
void reduce_scatter_shm_direct(const CollectiveArgs& args);
bool reduce_scatter_shm_direct_supports(const CollectiveArgs& args);  // every rank on one host, over shm

// broadcast: count elements of recv (== send) from args.root to every rank.
void broadcast_binomial(const CollectiveArgs& args);
void broadcast_chain(const CollectiveArgs& args);
void broadcast_shm_direct(const CollectiveArgs& args);
bool broadcast_shm_direct_supports(const CollectiveArgs& args);  // every rank on one host, over shm

// alltoall: count = elements per peer; send and recv hold n blocks, send block p goes to rank
// p and rank p's block lands in recv block p. send and recv do not overlap.
void alltoall_pairwise(const CollectiveArgs& args);
// Every receive and send posted at once (alltoall_scattered.cc): pairwise's bytes, no steps.
void alltoall_scattered(const CollectiveArgs& args);
void alltoall_shm_direct(const CollectiveArgs& args);
bool alltoall_shm_direct_supports(const CollectiveArgs& args);  // every rank on one host, over shm

// alltoallv: args.count is 0 and *args.layout (alltoallv_args.h) holds the per-peer counts and
// displacements, checked; send and recv do not overlap, and this rank's own send and receive
// counts agree.
void alltoallv_pairwise(const CollectiveArgs& args);
// Every rank's counts exchanged first (alltoallv_counts.h), then the payload through the shared
// workspace; any counts, uneven and zero included.
void alltoallv_shm_direct(const CollectiveArgs& args);
bool alltoallv_shm_direct_supports(const CollectiveArgs& args);  // every rank on one host, over shm
// Within-host exchange, one leader-to-leader message per host pair, within-host scatter.
void alltoallv_hierarchical(const CollectiveArgs& args);
bool alltoallv_hierarchical_supports(const CollectiveArgs& args);  // several hosts, one with several ranks

}  // namespace braid::algorithms
