// Pairwise-exchange alltoallv: the schedule of alltoall_pairwise.cc (patterns/pairwise.h) with
// per-peer counts and displacements. Each message's envelope carries the sender's count for
// that peer, so a receiver expecting another count raises Mismatch rather than reading a
// truncated or overlong block. A zero-count message is still sent, for the same reason.
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/pairwise.h"

namespace braid::algorithms {

namespace {

// Block `peer` of a buffer; an empty block stays at the base, which may be null.
template <typename Byte>
Byte* block(Byte* base, const std::int64_t* counts, const std::int64_t* displs, int peer, std::size_t elem) {
  return counts[peer] == 0 ? base : base + static_cast<std::size_t>(displs[peer]) * elem;
}

}  // namespace

void alltoallv_pairwise(const CollectiveArgs& args) {
  const AlltoallvLayout& layout = *args.layout;
  const int n = args.comm.size(), r = args.comm.rank();
  const std::size_t elem = args.elem();
  if (layout.send_counts[r] > 0) {
    std::memcpy(block(args.recv, layout.recv_counts, layout.recv_displs, r, elem),
                block(args.send, layout.send_counts, layout.send_displs, r, elem), args.bytes(layout.send_counts[r]));
  }
  for (int step = 1; step <= pairwise::steps(n); ++step) {
    const int to = pairwise::send_peer(r, step, n), from = pairwise::recv_peer(r, step, n);
    exchange(args, block(args.send, layout.send_counts, layout.send_displs, to, elem), layout.send_counts[to], to,
             block(args.recv, layout.recv_counts, layout.recv_displs, from, elem), layout.recv_counts[from], from);
  }
}

}  // namespace braid::algorithms
