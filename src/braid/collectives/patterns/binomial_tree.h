// Index arithmetic of a binomial tree rooted at any rank, free of any data movement (the
// MPICH broadcast tree: Thakur, Rabenseifner & Gropp 2005). Ranks are renumbered relative to
// the root (rel = (rank - root) mod n); rel's parent clears its lowest set bit, and its
// children are rel + d for each power of two d below that bit (below the smallest power of
// two >= n for the root). Depth is ceil(log2 n), so a small message reaches everyone in
// ceil(log2 n) message latencies.
#pragma once

#include <vector>

namespace braid::binomial_tree {

inline int to_relative(int rank, int root, int n) { return ((rank - root) % n + n) % n; }
inline int to_absolute(int relative, int root, int n) { return (relative + root) % n; }

// -1 for the root.
inline int parent(int relative) { return relative == 0 ? -1 : relative & (relative - 1); }

// Children of `relative`, farthest (largest subtree) first, so the deepest branch starts
// earliest.
inline std::vector<int> children(int relative, int n) {
  int limit = 1;
  if (relative == 0) {
    while (limit < n) limit <<= 1;
  } else {
    limit = relative & -relative;
  }
  std::vector<int> result;
  for (int d = limit >> 1; d >= 1; d >>= 1) {
    if (relative + d < n) result.push_back(relative + d);
  }
  return result;
}

}  // namespace braid::binomial_tree
