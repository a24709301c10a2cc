// Steps the shared-memory direct algorithms share (their workspace: shm_workspace.h).
//
// reduce_in_rank_order is how every direct reducing algorithm combines the ranks'
// contributions: always in rank order 0..n-1, whichever rank does the reducing, so the bytes of
// an element depend only on the inputs (allreduce's slices reduced by different ranks agree,
// and reduce_scatter gives what an allreduce would in every block).
//
// ShmBlockRounds is the pipeline of the algorithms in which every rank holds one block of its
// input for every rank (alltoall: block q goes to rank q; reduce_scatter: rank q reduces block
// q of every input). Each half of a rank's staging area (ShmWorkspace::exchange_rounds) holds
// one sub-chunk of slice / 2 bytes per destination rank; round k stages chunk k of every block
// meant for a peer (one copy in), waits until every peer has, and runs the caller's read step,
// which finds chunk k of the block each peer staged for this rank at staged(peer, rank, half).
// The block for this rank itself is never staged: the read step takes it from `send`.
//
// Thread-safety: as ShmWorkspace (the one thread running the communicator's collectives).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "braid/base/reduce_op.h"
#include "braid/collectives/collective_args.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

// The communicator's workspace, created at its first shared-memory collective; throws the
// fabric's error first if it is poisoned (the one-step paths send no message, so nothing else
// would notice a failed communicator). Lock-free and allocation-free once it exists.
ShmWorkspace& shm_workspace_of(const CollectiveArgs& args);

// dst = input(0) op input(1) op ... op input(ranks - 1) over `count` elements, left to right.
// input(q) returns a pointer to rank q's contribution; input(0) may be dst itself (in place),
// no other may overlap dst.
template <class Input>
void reduce_in_rank_order(std::byte* dst, int ranks, const Input& input, std::int64_t count, DType dtype,
                          ReduceOp op) {
  const std::byte* first = input(0);
  if (first != dst) std::memcpy(dst, first, static_cast<std::size_t>(count) * dtype_size(dtype));
  for (int q = 1; q < ranks; ++q) reduce_into(dst, input(q), static_cast<std::size_t>(count), dtype, op);
}

class ShmBlockRounds {
 public:
  // REQUIRES: the call's signature is posted (ShmWorkspace::post_call), args.count > 0, and
  // args.send holds n blocks of args.count elements.
  ShmBlockRounds(const CollectiveArgs& args, ShmWorkspace& ws);

  // The first element, within each block, of chunk `round`, and the chunk's length.
  std::int64_t first(std::int64_t round) const { return round * chunk_; }
  std::int64_t elements(std::int64_t round) const;
  // Chunk of the block that rank `owner` staged for rank `destination` in the half at `half`.
  const std::byte* staged(int owner, int destination, std::size_t half) const {
    return sub_chunk(owner, destination, half);
  }

  // Runs every round: stages this rank's chunks for its peers, then read(round, half).
  void run(const ShmWorkspace::RoundStep& read);

 private:
  std::byte* sub_chunk(int owner, int destination, std::size_t half) const {
    return ws_.staging(owner) + half + static_cast<std::size_t>(destination) * sub_bytes_;
  }
  void stage(std::int64_t round, std::size_t half) const;

  const CollectiveArgs& a_;
  ShmWorkspace& ws_;
  const int n_, r_;
  const std::size_t sub_bytes_;  // one destination's share of a half, whole elements
  const std::int64_t chunk_;     // elements per sub-chunk
};

}  // namespace braid::algorithms
