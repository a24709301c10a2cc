// Rabenseifner's allreduce (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005): a
// recursive-halving reduce-scatter then a recursive-doubling allgather, composed from those
// two algorithms (STYLE.md, "compose, don't copy"). 2 log2 n latencies and 2(n-1)/n of the
// buffer per rank, like ring's bytes with ring's latency cut to logarithmic: the choice for
// medium and large messages on power-of-two worlds (others fall back to the default).
//
// Both halves need n equal blocks, so the buffer is split into n blocks of floor(count / n)
// elements and a tail of count mod n (< n) elements, reduced by recursive doubling. Every
// element is reduced once, by one owner (or in the fixed order of recursive doubling for the
// tail), then copied: every rank ends with identical bytes.
#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/recursive_doubling.h"

namespace braid::algorithms {

bool allreduce_rabenseifner_supports(const CollectiveArgs& args) {
  return recursive_doubling::is_power_of_two(args.comm.size());
}

void allreduce_rabenseifner(const CollectiveArgs& args) {
  const int n = args.comm.size();
  const std::int64_t block = args.count / n, tail = args.count % n;
  if (block > 0) {
    // reduce_scatter reads the whole buffer as `send` and writes block r only after its last
    // read; allgather starts from block r in place: recv is both.
    CollectiveArgs blocks = args;
    blocks.count = block;
    blocks.send = args.recv;
    blocks.recv = block_at(blocks, args.recv, args.comm.rank());
    reduce_scatter_recursive_halving(blocks);
    blocks.recv = args.recv;
    allgather_recursive_doubling(blocks);
  }
  if (tail > 0) {
    CollectiveArgs rest = args;
    rest.count = tail;
    rest.recv = args.recv + args.bytes(block * n);
    rest.send = rest.recv;
    allreduce_recursive_doubling(rest);
  }
}

}  // namespace braid::algorithms
