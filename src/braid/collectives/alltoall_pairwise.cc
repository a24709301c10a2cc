// Pairwise-exchange alltoall (patterns/pairwise.h): this rank's own block is a local copy,
// then n-1 steps each receive one block and send one. n-1 latencies and (n-1)/n of the send
// buffer on the wire per rank, which is optimal in bytes; the latency term makes Bruck's
// log2(n)-round alltoall better for tiny blocks on large worlds. The
// entry point guarantees send and recv do not overlap (it stages an in-place send).
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/pairwise.h"

namespace braid::algorithms {

void alltoall_pairwise(const CollectiveArgs& args) {
  const int n = args.comm.size(), r = args.comm.rank();
  std::memcpy(block_at(args, args.recv, r), block_at(args, args.send, r), args.bytes(args.count));
  for (int step = 1; step <= pairwise::steps(n); ++step) {
    const int to = pairwise::send_peer(r, step, n), from = pairwise::recv_peer(r, step, n);
    exchange(args, block_at(args, args.send, to), args.count, to, block_at(args, args.recv, from), args.count, from);
  }
}

}  // namespace braid::algorithms
