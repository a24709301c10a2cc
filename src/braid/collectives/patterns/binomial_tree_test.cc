#include "braid/collectives/patterns/binomial_tree.h"

#include <vector>

#include <gtest/gtest.h>

namespace braid::binomial_tree {
namespace {

// Every non-root rank has exactly one parent, which lists it as a child, and the tree is no
// deeper than ceil(log2 n).
TEST(BinomialTreePatternTest, ParentsAndChildrenAgreeAndDepthIsLogarithmic) {
  for (int n = 1; n <= 17; ++n) {
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    std::vector<int> times_child(static_cast<std::size_t>(n), 0);
    for (int v = 0; v < n; ++v) {
      for (int c : children(v, n)) {
        ASSERT_LT(c, n);
        EXPECT_EQ(parent(c), v);
        ++times_child[static_cast<std::size_t>(c)];
      }
      int depth = 0;
      for (int u = v; u != 0; u = parent(u)) ++depth;
      EXPECT_LE(depth, log2n);
    }
    EXPECT_EQ(times_child[0], 0);
    for (int v = 1; v < n; ++v) EXPECT_EQ(times_child[static_cast<std::size_t>(v)], 1) << "n " << n << " rel " << v;
  }
}

TEST(BinomialTreePatternTest, ChildrenFarthestFirst) {
  EXPECT_EQ(children(0, 5), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(children(2, 5), (std::vector<int>{3}));
  EXPECT_TRUE(children(4, 5).empty());
  EXPECT_EQ(parent(6), 4);
}

TEST(BinomialTreePatternTest, RelativeNumberingRoundTrips) {
  for (int n = 1; n <= 6; ++n) {
    for (int root = 0; root < n; ++root) {
      EXPECT_EQ(to_relative(root, root, n), 0);
      for (int r = 0; r < n; ++r) EXPECT_EQ(to_absolute(to_relative(r, root, n), root, n), r);
    }
  }
}

}  // namespace
}  // namespace braid::binomial_tree
