// Ring allgather: in n-1 steps each rank forwards to its right neighbour the block it received
// in the previous step (its own first). Bandwidth-optimal, (n-1)/n of the result leaves each
// rank, but n-1 message latencies: the default for large messages (Patarasuk & Yuan 2009).
// Works in place on recv, where the entry point has put this rank's block.
#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/ring.h"

namespace braid::algorithms {

void allgather_ring(const CollectiveArgs& args) {
  const int n = args.comm.size(), r = args.comm.rank();
  for (int step = 0; step < n - 1; ++step) {
    int out = ring::allgather_by_rank_send_block(r, step, n), in = ring::allgather_by_rank_recv_block(r, step, n);
    exchange(args, block_at(args, args.recv, out), args.count, ring::right_of(r, n), block_at(args, args.recv, in),
             args.count, ring::left_of(r, n));
  }
}

}  // namespace braid::algorithms
