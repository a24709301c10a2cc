// Tree allreduce: binomial-tree reduce to rank 0, then binomial-tree broadcast from it,
// composed from reduce_binomial and broadcast_binomial. 2 ceil(log2 n) latencies for any n,
// but the whole buffer crosses every level twice: a small-message algorithm, simpler than
// recursive doubling and with half its bytes on the wire per rank (the root sends and receives
// log2 n buffers, the others about two). The result is computed once, at rank 0, and copied:
// every rank ends with identical bytes.
#include "braid/collectives/algorithms.h"

namespace braid::algorithms {

void allreduce_tree(const CollectiveArgs& args) {
  CollectiveArgs in_place = args;  // the entry point has copied send into recv
  in_place.send = args.recv;
  in_place.root = 0;
  reduce_binomial(in_place);
  broadcast_binomial(in_place);
}

}  // namespace braid::algorithms
