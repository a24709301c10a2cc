// Recursive-doubling allgather (Thakur, Rabenseifner & Gropp 2005): log2 n rounds, in which
// partners at distance 1, 2, 4, ... swap everything they hold, so the data held doubles each
// round. Same bytes as ring ((n-1)/n of the result per rank) in log2 n latencies instead of
// n-1; power-of-two worlds only (others fall back to the default). In place on recv, where
// the entry point has put this rank's block; every range swapped is contiguous.
#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/recursive_doubling.h"

namespace braid::algorithms {

bool allgather_recursive_doubling_supports(const CollectiveArgs& args) {
  return recursive_doubling::is_power_of_two(args.comm.size());
}

void allgather_recursive_doubling(const CollectiveArgs& args) {
  namespace rd = recursive_doubling;
  const int n = args.comm.size(), r = args.comm.rank();
  for (int round = 0; round < rd::rounds(n); ++round) {
    int d = rd::doubling_distance(round), peer = rd::partner(r, d);
    rd::Range mine = rd::doubling_held(r, d), theirs = rd::doubling_held(peer, d);
    exchange(args, block_at(args, args.recv, mine.first), mine.count * args.count, peer,
             block_at(args, args.recv, theirs.first), theirs.count * args.count, peer);
  }
}

}  // namespace braid::algorithms
