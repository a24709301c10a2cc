// Linear gather: every rank sends its block straight to the root, which posts all n-1
// receives at once, each landing in place at its block. One latency on the critical path but
// n-1 messages into the root, which serialises them on its links: fine for the moderate
// worlds braid targets; a binomial gather (log2 n latencies, blocks forwarded up the tree)
// would suit many small blocks.
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

void gather_linear(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), r = args.comm.rank();
  if (r != args.root) {
    access.post_collective_send(args.send, args.envelope(args.count), args.root).wait();
    return;
  }
  std::vector<Work> receives;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    receives.push_back(access.post_collective_recv(block_at(args, args.recv, peer), args.envelope(args.count), peer));
  }
  for (Work& received : receives) received.wait();
}

}  // namespace braid::algorithms
