// Scattered alltoall (MPICH's and Open MPI's "scattered" / basic linear): this rank's own block
// is a local copy, then every receive is posted, then every send, all at once, and all are
// waited on. The bytes are pairwise's; what changes is that no step waits for the one before
// it. Across hosts that keeps the link busy: in pairwise's lock-step exchange between 2 hosts
// x 2 ranks, the steps carry one, two and one block across the link, and each waits for its
// slowest transfer, so the link idles; posted together, the transfers share it. 2 emulated
// hosts x 2 ranks, 16 MiB, veth shaped to 10 Gbit/s: 24.7-26.0 ms against pairwise's 42.8-43.1
// (Open MPI's tcp BTL 29.4-33.3); at 1 Gbit/s 140.7 ms, 95% of the link-rate bound, against
// 151-157 (docs/performance.md, "Across emulated hosts on a quiet machine"). Every message
// is in flight at once, n-1 each way per rank, which is why the tuner takes it only for
// small worlds across hosts (the built-in table).
//
// The receives are posted first, in pairwise order, so that every arriving block lands in
// place; each peer sends this rank exactly one message of the call, so the receives match
// their senders whatever order the messages arrive in.
#include <cstring>
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/pairwise.h"

namespace braid::algorithms {

void alltoall_scattered(const CollectiveArgs& args) {
  const int n = args.comm.size(), r = args.comm.rank();
  std::memcpy(block_at(args, args.recv, r), block_at(args, args.send, r), args.bytes(args.count));
  detail::CollectiveAccess access(args.comm);
  std::vector<Work> works;
  works.reserve(2 * static_cast<std::size_t>(pairwise::steps(n)));
  for (int step = 1; step <= pairwise::steps(n); ++step) {
    const int from = pairwise::recv_peer(r, step, n);
    works.push_back(access.post_collective_recv(block_at(args, args.recv, from), args.envelope(args.count), from));
  }
  for (int step = 1; step <= pairwise::steps(n); ++step) {
    const int to = pairwise::send_peer(r, step, n);
    works.push_back(access.post_collective_send(block_at(args, args.send, to), args.envelope(args.count), to));
  }
  wait_all(works);
}

}  // namespace braid::algorithms
