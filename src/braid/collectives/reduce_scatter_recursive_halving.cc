// Recursive-halving reduce-scatter (Thakur, Rabenseifner & Gropp 2005; the first half of
// Rabenseifner's allreduce): log2 n rounds; in each, partners at distance n/2, n/4, ... swap
// the half of their current range the other keeps, and reduce the half they keep. Same bytes
// as ring ((n-1)/n of the input per rank) in log2 n latencies instead of n-1; power-of-two
// worlds only (others fall back to the default).
//
// Partials live in scratch: `acc` (n/2 blocks, the range kept after round 0) and `incoming`
// (n/4 blocks, the largest later receive). Round 0 receives straight into acc and adds the
// local input, so the input is read but never written and send == recv works.
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/recursive_doubling.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace rd = recursive_doubling;

namespace {

void reduce_blocks(const CollectiveArgs& a, std::byte* dst, const std::byte* src, int blocks) {
  reduce_into(dst, src, static_cast<std::size_t>(blocks * a.count), a.dtype, a.reduce_op);
}

}  // namespace

bool reduce_scatter_recursive_halving_supports(const CollectiveArgs& args) {
  return rd::is_power_of_two(args.comm.size());
}

void reduce_scatter_recursive_halving(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), r = args.comm.rank();
  std::byte* acc = access.scratch(static_cast<std::size_t>(n / 2 + n / 4) * args.bytes(args.count));
  std::byte* incoming = block_at(args, acc, n / 2);
  rd::Range current{0, n};
  int base = 0;  // the block acc starts at (kept ranges only shrink inside round 0's)
  for (int round = 0; round < rd::rounds(n); ++round) {
    int peer = rd::partner(r, rd::halving_distance(n, round));
    rd::Range kept = rd::halving_kept(r, current), sent = rd::halving_sent(r, current);
    if (round == 0) {
      base = kept.first;
      exchange(args, block_at(args, args.send, sent.first), sent.count * args.count, peer, acc,
               kept.count * args.count, peer);
      reduce_blocks(args, acc, block_at(args, args.send, kept.first), kept.count);
    } else {
      exchange(args, block_at(args, acc, sent.first - base), sent.count * args.count, peer, incoming,
               kept.count * args.count, peer);
      reduce_blocks(args, block_at(args, acc, kept.first - base), incoming, kept.count);
    }
    current = kept;
  }
  std::memcpy(args.recv, block_at(args, acc, r - base), args.bytes(args.count));
}

}  // namespace braid::algorithms
