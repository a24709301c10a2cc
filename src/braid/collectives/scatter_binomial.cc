// Binomial scatter (the MPICH short-message scatter, Thakur, Rabenseifner & Gropp 2005): the
// mirror of gather_binomial. The root sends each child the blocks of that child's whole
// subtree (a contiguous range of relative ranks, patterns/binomial_blocks.h) in one message,
// farthest subtree first; every inner rank keeps its own block and passes its children's
// ranges down the same way. ceil(log2 n) latencies instead of the linear scatter's n-1 sends
// from the root, for up to ceil(log2 n) hops per block: it suits small blocks.
//
// Buffers: the root sends straight from `send`, except the one child range that wraps past
// rank n-1 to rank 0 when root != 0, which it stages in scratch; inner ranks receive their
// subtree into scratch (recv holds one block); leaves receive into recv directly. The root's
// own block is already in recv (the entry point copied it, or it is there in place).
#include <cstring>
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/patterns/binomial_blocks.h"
#include "braid/collectives/patterns/binomial_tree.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

namespace blocks = binomial_blocks;
namespace tree = binomial_tree;

void scatter_from_root(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), root = args.root;
  std::vector<Work> sends;
  for (int child : tree::children(0, n)) {
    const int size = blocks::subtree_size(child, n);
    const blocks::Runs runs = blocks::absolute_runs(child, size, root, n);
    const std::byte* source = block_at(args, args.send, runs.head.first);
    if (runs.wraps()) {  // at most one child range wraps (binomial_blocks_test.cc), so one scratch
      std::byte* staged = access.scratch(args.bytes(size * args.count));
      std::memcpy(staged, source, args.bytes(runs.head.count * args.count));
      std::memcpy(block_at(args, staged, runs.head.count), block_at(args, args.send, runs.tail.first),
                  args.bytes(runs.tail.count * args.count));
      source = staged;
    }
    sends.push_back(
        access.post_collective_send(source, args.envelope(size * args.count), tree::to_absolute(child, root, n)));
  }
  wait_all(sends);
}

// A non-root rank: receive the subtree [me, me + size) in relative order, keep block me, send
// each child its range.
void pass_down_subtree(const CollectiveArgs& args, int me) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), root = args.root;
  const int parent = tree::to_absolute(tree::parent(me), root, n);
  const int size = blocks::subtree_size(me, n);
  if (size == 1) {
    access.post_collective_recv(args.recv, args.envelope(args.count), parent).wait();
    return;
  }
  std::byte* subtree = access.scratch(args.bytes(size * args.count));
  access.post_collective_recv(subtree, args.envelope(size * args.count), parent).wait();
  std::vector<Work> sends;
  for (int child : tree::children(me, n)) {
    sends.push_back(access.post_collective_send(block_at(args, subtree, child - me),
                                                args.envelope(blocks::subtree_size(child, n) * args.count),
                                                tree::to_absolute(child, root, n)));
  }
  std::memcpy(args.recv, subtree, args.bytes(args.count));
  wait_all(sends);
}

}  // namespace

void scatter_binomial(const CollectiveArgs& args) {
  const int me = tree::to_relative(args.comm.rank(), args.root, args.comm.size());
  if (me == 0) {
    scatter_from_root(args);
  } else {
    pass_down_subtree(args, me);
  }
}

}  // namespace braid::algorithms
