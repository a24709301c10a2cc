// Bruck allgather (Bruck et al., IEEE TPDS 1997): ceil(log2 n) rounds for any n, each sending
// up to half the result to the rank 2^k below and receiving from the rank 2^k above, then one
// local rotation. (n-1)/n of the result per rank like ring, in ceil(log2 n) latencies: the
// small-message choice when n is not a power of two. The rounds run in a scratch array whose
// slot i is rank (r + i) mod n's block, because that numbering makes every transfer contiguous.
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/bruck.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

// slot i of `slots` -> block (r + i) mod n of recv, as two contiguous copies.
void rotate_into_recv(const CollectiveArgs& args, const std::byte* slots) {
  const int n = args.comm.size(), r = args.comm.rank();
  std::size_t block = args.bytes(args.count);
  std::memcpy(block_at(args, args.recv, r), slots, static_cast<std::size_t>(n - r) * block);
  std::memcpy(args.recv, block_at(args, slots, n - r), static_cast<std::size_t>(r) * block);
}

}  // namespace

void allgather_bruck(const CollectiveArgs& args) {
  const int n = args.comm.size(), r = args.comm.rank();
  std::byte* slots = detail::CollectiveAccess(args.comm).scratch(static_cast<std::size_t>(n) * args.bytes(args.count));
  std::memcpy(slots, block_at(args, args.recv, r), args.bytes(args.count));
  for (int round = 0; round < bruck::rounds(n); ++round) {
    std::int64_t elements = bruck::slots_in_round(round, n) * args.count;
    exchange(args, slots, elements, bruck::send_peer(r, round, n), block_at(args, slots, bruck::distance(round)),
             elements, bruck::recv_peer(r, round, n));
  }
  rotate_into_recv(args, slots);
}

}  // namespace braid::algorithms
