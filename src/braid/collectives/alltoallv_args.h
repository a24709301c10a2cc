// alltoallv's per-peer layout. CollectiveArgs has one count, and alltoallv has two per peer
// (what goes to it, what comes from it) plus where each block sits, so CollectiveArgs points at
// the layout (CollectiveArgs::layout) rather than widening for every other collective.
// alltoallv's algorithms are in the registry like any other (algorithm_registry.cc) and read
// *args.layout.
#pragma once

#include <cstdint>
#include <vector>

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
// address range, a buffer with a non-zero block is non-null, send != recv (no in place) and no
// send block shares a byte with a recv block (the error names the first such pair).
void check_alltoallv_layout(const Communicator& comm, const void* send, const void* recv,
                            const AlltoallvLayout& layout, DType dtype);

// Mismatch if this rank's own send and receive counts differ: a disagreement (with itself)
// rather than a bad argument, so a queued call raises it when it runs, at wait().
void check_alltoallv_self(const Communicator& comm, const AlltoallvLayout& layout);

// The bytes this rank sends (its own block included): what an observer reports for the call.
std::uint64_t alltoallv_send_bytes(const CollectiveArgs& args);

// A copy of a layout's 4n integers, for a call that outlives the caller's arrays (ialltoallv).
class AlltoallvLayoutCopy {
 public:
  AlltoallvLayoutCopy(const AlltoallvLayout& layout, int size);
  AlltoallvLayout view() const;

 private:
  std::vector<std::int64_t> values_;  // send counts, send displs, recv counts, recv displs
  std::size_t size_;
};

}  // namespace braid
