// Pipelined chain broadcast (patterns/chain.h): root -> root+1 -> ... in segments, each rank
// forwarding segment k while segment k+1 arrives. About (segments + n - 2) segment times, so
// for large messages close to one message time whatever n: the large-message broadcast.
// At most two receives and two sends are in flight per rank, which bounds the buffering a
// transport may need for unexpected segments.
#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/chain.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

void broadcast_chain(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), root = args.root;
  const int me = chain::to_relative(args.comm.rank(), root, n);
  const int from = me > 0 ? chain::to_absolute(chain::previous(me), root, n) : -1;
  const int to = chain::next(me, n) >= 0 ? chain::to_absolute(chain::next(me, n), root, n) : -1;
  const std::int64_t per = chain::segment_elements(args.count, args.elem());
  const std::int64_t segments = chain::segment_count(args.count, per);
  auto post_recv = [&](std::int64_t k) {
    chain::Segment s = chain::segment(args.count, per, k);
    return access.post_collective_recv(args.recv + args.bytes(s.offset), args.envelope(s.count), from);
  };
  Work next_recv = from >= 0 ? post_recv(0) : Work{};
  Work previous_send;
  for (std::int64_t k = 0; k < segments; ++k) {
    Work current = next_recv;
    if (from >= 0 && k + 1 < segments) next_recv = post_recv(k + 1);  // posted before forwarding k
    current.wait();
    if (to < 0) continue;
    chain::Segment s = chain::segment(args.count, per, k);
    Work sent = access.post_collective_send(args.recv + args.bytes(s.offset), args.envelope(s.count), to);
    previous_send.wait();
    previous_send = sent;
  }
  previous_send.wait();
}

}  // namespace braid::algorithms
