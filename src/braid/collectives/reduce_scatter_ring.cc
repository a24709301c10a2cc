// Ring reduce-scatter (Patarasuk & Yuan 2009), MPI_Reduce_scatter_block semantics: in n-1 steps
// each rank adds its own contribution to the partial block arriving from its left neighbour
// and forwards it right; the partial of block b starts at rank b+1 and completes at rank b.
// Bandwidth-optimal: (n-1)/n of the input leaves each rank. Each block is reduced in the same
// fixed rank order on every run, and only by its owner at the end, so results are
// reproducible. Partials alternate between two scratch blocks (one in flight, one arriving),
// and `send` is only read, so send == recv works: recv is written once, after the last read.
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

void reduce_scatter_ring(const CollectiveArgs& args) {
  const int n = args.comm.size(), r = args.comm.rank();
  const std::size_t block = args.bytes(args.count);
  std::byte* partials = detail::CollectiveAccess(args.comm).scratch(2 * block);
  const std::byte* out = block_at(args, args.send, ring::reduce_scatter_by_rank_send_block(r, 0, n));
  for (int step = 0; step < n - 1; ++step) {
    std::byte* in = partials + static_cast<std::size_t>(step % 2) * block;
    exchange(args, out, args.count, ring::right_of(r, n), in, args.count, ring::left_of(r, n));
    const std::byte* own = block_at(args, args.send, ring::reduce_scatter_by_rank_recv_block(r, step, n));
    reduce_into(in, own, static_cast<std::size_t>(args.count), args.dtype, args.reduce_op);
    out = in;
  }
  std::memcpy(args.recv, out, block);
}

}  // namespace braid::algorithms
