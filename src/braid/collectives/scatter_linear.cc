// Linear scatter: the root posts one send per rank, straight from that rank's block, and each
// rank receives its block in place. The mirror of gather_linear (same costs and trade-off).
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

void scatter_linear(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), r = args.comm.rank();
  if (r != args.root) {
    access.post_collective_recv(args.recv, args.envelope(args.count), args.root).wait();
    return;
  }
  std::vector<Work> sends;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    sends.push_back(access.post_collective_send(block_at(args, args.send, peer), args.envelope(args.count), peer));
  }
  for (Work& sent : sends) sent.wait();
}

}  // namespace braid::algorithms
