// Binomial-tree reduce (the MPICH short-message reduce, Thakur, Rabenseifner & Gropp 2005):
// the broadcast tree of patterns/binomial_tree.h run upwards. Each rank combines the partials
// of its children into its own input and sends the result to its parent: ceil(log2 n)
// latencies, but the whole message crosses every level, so (like binomial broadcast) it suits
// small and medium messages.
//
// Order: a rank's subtree is the contiguous relative range [me, me + 2^k); children are taken
// nearest first (the smallest subtree, which finishes first), so the partial is always
// `mine op (me+1's) op (me+2's subtree) op ...`: a fixed tree in relative-rank order, the
// same on every run. The root computes the result once.
//
// `send` is only read. Partials live in recv on the root and in scratch elsewhere (recv is not
// significant there); leaves send their input directly.
#include <cstring>
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/binomial_tree.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

void reduce_binomial(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  namespace tree = binomial_tree;
  const int n = args.comm.size(), root = args.root;
  const int me = tree::to_relative(args.comm.rank(), root, n), parent = tree::parent(me);
  const std::vector<int> children = tree::children(me, n);
  const std::size_t bytes = args.bytes(args.count);
  const std::byte* partial = args.send;
  if (!children.empty()) {
    std::byte* scratch = access.scratch(me == 0 ? bytes : 2 * bytes);
    std::byte* acc = me == 0 ? args.recv : scratch + bytes;
    if (acc != args.send) std::memcpy(acc, args.send, bytes);
    // Reverse iterators, not std::views::reverse: clang 14 cannot compile libstdc++ 12's
    // (scripts/thread_safety.sh builds the library with clang).
    for (auto child_it = children.rbegin(); child_it != children.rend(); ++child_it) {
      const int child = *child_it;
      access.post_collective_recv(scratch, args.envelope(args.count), tree::to_absolute(child, root, n)).wait();
      reduce_into(acc, scratch, static_cast<std::size_t>(args.count), args.dtype, args.reduce_op);
    }
    partial = acc;
  }
  if (parent >= 0) {
    access.post_collective_send(partial, args.envelope(args.count), tree::to_absolute(parent, root, n)).wait();
  }
}

}  // namespace braid::algorithms
