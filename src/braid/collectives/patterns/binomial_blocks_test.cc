#include "braid/collectives/patterns/binomial_blocks.h"

#include <vector>

#include <gtest/gtest.h>

#include "braid/collectives/patterns/binomial_tree.h"

namespace braid::binomial_blocks {
namespace {

// A rank's subtree is itself followed by its children's subtrees, back to back in the order
// children() lists them reversed (nearest first): the layout gather and scatter rely on.
TEST(BinomialBlocksPatternTest, ChildrenTileTheSubtreeContiguously) {
  for (int n = 1; n <= 33; ++n) {
    for (int v = 0; v < n; ++v) {
      std::vector<int> kids = binomial_tree::children(v, n);
      int next = v + 1;
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) {
        EXPECT_EQ(*it, next) << "n " << n << " rel " << v;
        next += subtree_size(*it, n);
      }
      EXPECT_EQ(next, v + subtree_size(v, n)) << "n " << n << " rel " << v;
      EXPECT_LE(v + subtree_size(v, n), n);
    }
  }
}

// Every relative rank falls in exactly the subtrees of itself and its ancestors.
TEST(BinomialBlocksPatternTest, SubtreeHoldsExactlyTheDescendants) {
  for (int n = 1; n <= 20; ++n) {
    for (int v = 0; v < n; ++v) {
      for (int u = 0; u < n; ++u) {
        bool is_descendant = false;
        for (int a = u; a >= 0; a = binomial_tree::parent(a)) is_descendant |= a == v;
        EXPECT_EQ(u >= v && u < v + subtree_size(v, n), is_descendant) << "n " << n << " v " << v << " u " << u;
      }
    }
  }
}

TEST(BinomialBlocksPatternTest, SubtreeSizes) {
  EXPECT_EQ(subtree_size(0, 5), 5);
  EXPECT_EQ(subtree_size(4, 5), 1);  // lowest bit 4, clipped at n - 4
  EXPECT_EQ(subtree_size(2, 5), 2);
  EXPECT_EQ(subtree_size(4, 8), 4);
  EXPECT_EQ(subtree_size(6, 7), 1);
}

TEST(BinomialBlocksPatternTest, AbsoluteRunsListTheRotatedBlocksInOrder) {
  for (int n = 1; n <= 9; ++n) {
    for (int root = 0; root < n; ++root) {
      for (int first = 0; first < n; ++first) {
        for (int count = 0; first + count <= n; ++count) {
          Runs runs = absolute_runs(first, count, root, n);
          std::vector<int> got;
          for (const binomial_blocks::Run& run : {runs.head, runs.tail}) {
            for (int i = 0; i < run.count; ++i) got.push_back(run.first + i);
          }
          std::vector<int> want;
          for (int j = first; j < first + count; ++j) want.push_back((j + root) % n);
          EXPECT_EQ(got, want) << "n " << n << " root " << root << " first " << first << " count " << count;
          EXPECT_EQ(runs.wraps(), runs.tail.count > 0);
        }
      }
    }
  }
  Runs wrapped = absolute_runs(2, 3, 3, 6);  // relative 2..4 = absolute 5, 0, 1
  EXPECT_EQ(wrapped.head.first, 5);
  EXPECT_EQ(wrapped.head.count, 1);
  EXPECT_EQ(wrapped.tail.first, 0);
  EXPECT_EQ(wrapped.tail.count, 2);
}

// The root's children split [1, n) into ranges and only the one holding absolute rank 0 past
// its start can wrap, so the root needs one scratch range at most.
TEST(BinomialBlocksPatternTest, AtMostOneChildRangeOfTheRootWraps) {
  for (int n = 1; n <= 33; ++n) {
    for (int root = 0; root < n; ++root) {
      int wrapping = 0;
      for (int child : binomial_tree::children(0, n)) {
        wrapping += absolute_runs(child, subtree_size(child, n), root, n).wraps();
      }
      EXPECT_LE(wrapping, 1) << "n " << n << " root " << root;
      if (root == 0) {
        EXPECT_EQ(wrapping, 0);
      }
    }
  }
}

}  // namespace
}  // namespace braid::binomial_blocks
