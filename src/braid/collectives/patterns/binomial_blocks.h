// Which blocks a rank of a binomial tree (binomial_tree.h) forwards in gather and scatter, free
// of any data movement. In relative numbering the subtree of `relative` is the contiguous range
// [relative, relative + subtree_size): its children's subtrees tile the rest of that range in
// order, so a rank can hold its whole subtree's blocks as one buffer and exchange each child's
// part as one message. Only the root maps relative ranges back to absolute block positions,
// and there a range wraps past rank n-1 to rank 0 when root != 0.
#pragma once

#include <algorithm>

namespace braid::binomial_blocks {

// Ranks in the subtree of `relative`: n for the root, else its lowest set bit clipped at n
// (children are relative + d for every power of two d below that bit).
inline int subtree_size(int relative, int n) {
  if (relative == 0) return n;
  return std::min(relative & -relative, n - relative);
}

// `count` consecutive absolute block indices starting at `first`.
struct Run {
  int first = 0;
  int count = 0;
};

// The relative blocks [relative_first, relative_first + count) as absolute block indices:
// `head`, then `tail` (empty unless the range wraps past block n-1 to block 0).
struct Runs {
  Run head;
  Run tail;
  bool wraps() const { return tail.count > 0; }
};

// REQUIRES: 0 <= relative_first, count >= 0, relative_first + count <= n, 0 <= root < n.
inline Runs absolute_runs(int relative_first, int count, int root, int n) {
  const int first = (relative_first + root) % n;
  const int before_wrap = std::min(count, n - first);
  return {.head = {.first = first, .count = before_wrap}, .tail = {.first = 0, .count = count - before_wrap}};
}

}  // namespace braid::binomial_blocks
