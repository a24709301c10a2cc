// Binomial-tree broadcast (the MPICH short-message broadcast, Thakur, Rabenseifner & Gropp
// 2005): each rank receives the whole message from its parent, then sends it to its children,
// farthest subtree first. ceil(log2 n) message latencies, but the whole message crosses
// ceil(log2 n) links in series, so large messages prefer the pipelined chain.
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/binomial_tree.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

void broadcast_binomial(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  namespace tree = binomial_tree;
  const int n = args.comm.size(), root = args.root;
  const int me = tree::to_relative(args.comm.rank(), root, n);
  if (int parent = tree::parent(me); parent >= 0) {
    access.post_collective_recv(args.recv, args.envelope(args.count), tree::to_absolute(parent, root, n)).wait();
  }
  std::vector<Work> sends;
  for (int child : tree::children(me, n)) {
    int peer = tree::to_absolute(child, root, n);
    sends.push_back(access.post_collective_send(args.recv, args.envelope(args.count), peer));
  }
  for (Work& sent : sends) sent.wait();
}

}  // namespace braid::algorithms
