// alltoallv's per-peer layout. CollectiveArgs has one count, and alltoallv has two per peer
// (what goes to it, what comes from it) plus where each block sits, so the layout travels
// beside CollectiveArgs rather than widening it for every other collective.
//
// alltoallv does not go through the algorithm registry (whose run() takes CollectiveArgs
// alone): the entry point accepts options.algorithm "" or "pairwise" and calls
// alltoallv_pairwise directly. When a second algorithm arrives, the registry entry should grow
// a layout-taking run function instead.
#pragma once

#include <cstdint>

#include "braid/collectives/collective_args.h"

namespace braid {

// MPI_Alltoallv semantics, in elements: block p of the send buffer (send_counts[p] elements at
// send_displs[p]) goes to rank p, and rank p's block lands in recv_counts[p] elements at
// recv_displs[p]. Each array has one entry per rank.
struct AlltoallvLayout {
  const std::int64_t* send_counts;
  const std::int64_t* send_displs;
  const std::int64_t* recv_counts;
  const std::int64_t* recv_displs;
};

// InvalidArgument unless every count and displacement is >= 0, each block's end fits in the
// address range, a buffer with a non-zero block is non-null and send != recv (no in place);
// Mismatch if this rank's own send and receive counts differ.
void check_alltoallv_layout(const Communicator& comm, const void* send, const void* recv,
                            const AlltoallvLayout& layout, DType dtype);

namespace algorithms {

// args.count is unused (0); args.op is kAlltoallv. Every one of the n-1 messages is sent,
// zero-length ones included, so its envelope can expose a count the peer disagrees with.
void alltoallv_pairwise(const CollectiveArgs& args, const AlltoallvLayout& layout);

}  // namespace algorithms

}  // namespace braid
