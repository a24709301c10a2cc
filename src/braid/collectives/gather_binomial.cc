// Binomial gather (the MPICH short-message gather, Thakur, Rabenseifner & Gropp 2005): the
// broadcast tree of patterns/binomial_tree.h run upwards, forwarding blocks instead of
// combining them. Numbered relative to the root, a rank's subtree is a contiguous range of
// relative ranks (patterns/binomial_blocks.h), so every inner rank collects its subtree's
// blocks in relative order into one buffer and sends them to its parent in one message.
// ceil(log2 n) latencies instead of the linear gather's n-1 messages into the root, but a
// block crosses up to ceil(log2 n) links, (n/2) log2(n) B bytes in all: it suits small blocks.
//
// Buffers: leaves send `send` as it is; inner ranks collect in scratch (recv is not
// significant off the root); the root receives each child's range straight into recv at its
// absolute position, except the one range that wraps past rank n-1 to rank 0 when root != 0,
// which lands in scratch and is copied out in two pieces. The root's own block is already in
// recv (the entry point put it there), so in place and out of place take the same path.
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

void gather_at_root(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), root = args.root;
  std::vector<Work> receives;
  blocks::Runs wrapped;  // the child range received into scratch, if any
  std::byte* scratch = nullptr;
  for (int child : tree::children(0, n)) {
    const int size = blocks::subtree_size(child, n);
    const blocks::Runs runs = blocks::absolute_runs(child, size, root, n);
    std::byte* landing = block_at(args, args.recv, runs.head.first);
    if (runs.wraps()) {
      wrapped = runs;
      landing = scratch = access.scratch(args.bytes(size * args.count));
    }
    receives.push_back(
        access.post_collective_recv(landing, args.envelope(size * args.count), tree::to_absolute(child, root, n)));
  }
  wait_all(receives);
  if (scratch == nullptr) return;
  std::memcpy(block_at(args, args.recv, wrapped.head.first), scratch, args.bytes(wrapped.head.count * args.count));
  std::memcpy(block_at(args, args.recv, wrapped.tail.first), block_at(args, scratch, wrapped.head.count),
              args.bytes(wrapped.tail.count * args.count));
}

// A non-root rank: collect the subtree [me, me + size) in relative order, send it up.
void forward_subtree(const CollectiveArgs& args, int me) {
  detail::CollectiveAccess access(args.comm);
  const int n = args.comm.size(), root = args.root;
  const int parent = tree::to_absolute(tree::parent(me), root, n);
  const int size = blocks::subtree_size(me, n);
  if (size == 1) {
    access.post_collective_send(args.send, args.envelope(args.count), parent).wait();
    return;
  }
  std::byte* subtree = access.scratch(args.bytes(size * args.count));
  std::vector<Work> receives;
  for (int child : tree::children(me, n)) {
    receives.push_back(access.post_collective_recv(block_at(args, subtree, child - me),
                                                   args.envelope(blocks::subtree_size(child, n) * args.count),
                                                   tree::to_absolute(child, root, n)));
  }
  std::memcpy(subtree, args.send, args.bytes(args.count));
  wait_all(receives);
  access.post_collective_send(subtree, args.envelope(size * args.count), parent).wait();
}

}  // namespace

void gather_binomial(const CollectiveArgs& args) {
  const int me = tree::to_relative(args.comm.rank(), args.root, args.comm.size());
  if (me == 0) {
    gather_at_root(args);
  } else {
    forward_subtree(args, me);
  }
}

}  // namespace braid::algorithms
