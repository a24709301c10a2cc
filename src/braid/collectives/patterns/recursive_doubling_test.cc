#include "braid/collectives/patterns/recursive_doubling.h"

#include <vector>

#include <gtest/gtest.h>

namespace braid::recursive_doubling {
namespace {

TEST(RecursiveDoublingPatternTest, PowersOfTwo) {
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_TRUE(is_power_of_two(8));
  EXPECT_FALSE(is_power_of_two(6));
  EXPECT_EQ(rounds(1), 0);
  EXPECT_EQ(rounds(16), 4);
}

// Simulates every rank: each round adds exactly the partner's (disjoint) range, and after the
// last round every rank holds all n blocks.
TEST(RecursiveDoublingPatternTest, DoublingGathersEveryBlockOnce) {
  for (int n : {1, 2, 4, 8, 16}) {
    for (int r = 0; r < n; ++r) {
      std::vector<int> held(static_cast<std::size_t>(n), 0);
      held[static_cast<std::size_t>(r)] = 1;
      for (int k = 0; k < rounds(n); ++k) {
        int d = doubling_distance(k), p = partner(r, d);
        Range mine = doubling_held(r, d), theirs = doubling_held(p, d);
        for (int b = mine.first; b < mine.first + mine.count; ++b) EXPECT_EQ(held[static_cast<std::size_t>(b)], 1);
        for (int b = theirs.first; b < theirs.first + theirs.count; ++b) ++held[static_cast<std::size_t>(b)];
      }
      for (int b = 0; b < n; ++b) EXPECT_EQ(held[static_cast<std::size_t>(b)], 1) << "n " << n << " rank " << r;
    }
  }
}

// Partners agree on the split: what r sends is exactly what its partner keeps, and after the
// last round every rank keeps only its own block.
TEST(RecursiveDoublingPatternTest, HalvingEndsWithEachRankOwningItsBlock) {
  for (int n : {1, 2, 4, 8, 16}) {
    std::vector<Range> current(static_cast<std::size_t>(n), Range{0, n});
    for (int k = 0; k < rounds(n); ++k) {
      int d = halving_distance(n, k);
      std::vector<Range> next(current.size());
      for (int r = 0; r < n; ++r) {
        int p = partner(r, d);
        const Range& mine = current[static_cast<std::size_t>(r)];
        EXPECT_EQ(mine, current[static_cast<std::size_t>(p)]);
        EXPECT_EQ(halving_sent(r, mine), halving_kept(p, mine));
        next[static_cast<std::size_t>(r)] = halving_kept(r, mine);
      }
      current = next;
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(current[static_cast<std::size_t>(r)], (Range{r, 1}));
  }
}

// Folding: the ranks that stay are numbered 0..p-1 exactly once, each folded-away rank's
// partner (rank - 1) stays, and virtual and real ranks convert both ways.
TEST(RecursiveDoublingPatternTest, FoldLeavesAPowerOfTwo) {
  for (int n = 1; n <= 13; ++n) {
    int p = power_of_two_below(n);
    EXPECT_TRUE(is_power_of_two(p));
    EXPECT_LT(n, 2 * p);
    std::vector<int> seen(static_cast<std::size_t>(p), 0);
    for (int r = 0; r < n; ++r) {
      if (folds_away(r, n)) {
        EXPECT_FALSE(folds_away(r - 1, n));
        continue;
      }
      int v = virtual_rank(r, n);
      ASSERT_GE(v, 0);
      ASSERT_LT(v, p);
      ++seen[static_cast<std::size_t>(v)];
      EXPECT_EQ(real_rank(v, n), r);
    }
    for (int count : seen) EXPECT_EQ(count, 1);
  }
}

}  // namespace
}  // namespace braid::recursive_doubling
