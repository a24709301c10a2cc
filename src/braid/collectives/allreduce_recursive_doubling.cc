// Recursive-doubling allreduce (Thakur, Rabenseifner & Gropp 2005): partners at distance
// 1, 2, 4, ... swap their whole partial result and both combine, so log2 p rounds of the whole
// buffer: the latency-optimal choice for small messages (ring needs 2(n-1) latencies). Any n:
// the ranks beyond the largest power of two p fold first (patterns/recursive_doubling.h), an
// odd rank of the first 2(n-p) handing its data to the even rank below it before and receiving
// the result after, which costs two extra latencies on those ranks.
//
// Bitwise identity: both partners of a round hold the same two partials and combine them in
// the same order, lower virtual rank's partial first (`lower op higher`), whichever of the two
// computes it; the fold does the same (even rank's data first). So after each round the two
// partners' buffers are identical, and by induction every rank ends with the same bytes, the
// reduction order being a fixed tree whatever the rank. (IEEE + and * are commutative, but
// min/max with NaN or signed zeros, and kernels in general, need not be: order is fixed here.)
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/recursive_doubling.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace rd = recursive_doubling;

namespace {

// recv = lower op higher, where `incoming` (scratch) is the partner's partial; both partners
// evaluate the same expression.
void combine(const CollectiveArgs& a, std::byte* incoming, bool mine_is_lower) {
  const auto count = static_cast<std::size_t>(a.count);
  if (mine_is_lower) {
    reduce_into(a.recv, incoming, count, a.dtype, a.reduce_op);
  } else {
    reduce_into(incoming, a.recv, count, a.dtype, a.reduce_op);
    std::memcpy(a.recv, incoming, a.bytes(a.count));
  }
}

}  // namespace

void allreduce_recursive_doubling(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), r = args.comm.rank();
  if (rd::folds_away(r, n)) {
    access.post_collective_send(args.recv, args.envelope(args.count), r - 1).wait();
    access.post_collective_recv(args.recv, args.envelope(args.count), r - 1).wait();
    return;
  }
  std::byte* incoming = access.scratch(args.bytes(args.count));
  const bool folded_pair = r < 2 * rd::fold_extra(n);
  if (folded_pair) {
    access.post_collective_recv(incoming, args.envelope(args.count), r + 1).wait();
    combine(args, incoming, /*mine_is_lower=*/true);
  }
  const int v = rd::virtual_rank(r, n), p = rd::power_of_two_below(n);
  for (int round = 0; round < rd::rounds(p); ++round) {
    const int peer_v = rd::partner(v, rd::doubling_distance(round)), peer = rd::real_rank(peer_v, n);
    exchange(args, args.recv, args.count, peer, incoming, args.count, peer);
    combine(args, incoming, v < peer_v);
  }
  if (folded_pair) access.post_collective_send(args.recv, args.envelope(args.count), r + 1).wait();
}

}  // namespace braid::algorithms
