#include "braid/collectives/patterns/pairwise.h"

#include <vector>

#include <gtest/gtest.h>

namespace braid::pairwise {
namespace {

// Simulates every step of every rank: what rank r sends to p in a step is what p receives
// from r in that same step, and over all steps each ordered pair (src, dst), src != dst,
// is delivered exactly once.
TEST(PairwisePatternTest, EveryOrderedPairExchangesExactlyOnceInMatchingSteps) {
  for (int n = 1; n <= 13; ++n) {
    std::vector<int> delivered(static_cast<std::size_t>(n * n), 0);
    for (int step = 1; step <= steps(n); ++step) {
      std::vector<int> receives_from(static_cast<std::size_t>(n), -1);
      for (int r = 0; r < n; ++r) {
        int to = send_peer(r, step, n);
        EXPECT_NE(to, r) << "n " << n << " step " << step;
        EXPECT_EQ(recv_peer(to, step, n), r) << "n " << n << " step " << step << " rank " << r;
        EXPECT_EQ(receives_from[static_cast<std::size_t>(to)], -1) << "two senders to " << to << " in one step";
        receives_from[static_cast<std::size_t>(to)] = r;
        ++delivered[static_cast<std::size_t>(r * n + to)];
      }
    }
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        EXPECT_EQ(delivered[static_cast<std::size_t>(src * n + dst)], src == dst ? 0 : 1)
            << "n " << n << " " << src << " -> " << dst;
      }
    }
  }
}

TEST(PairwisePatternTest, PeersWrapAroundTheWorld) {
  EXPECT_EQ(steps(1), 0);
  EXPECT_EQ(steps(5), 4);
  EXPECT_EQ(send_peer(4, 1, 5), 0);
  EXPECT_EQ(recv_peer(0, 1, 5), 4);
  EXPECT_EQ(send_peer(2, 3, 5), 0);
  EXPECT_EQ(recv_peer(2, 3, 5), 4);
}

}  // namespace
}  // namespace braid::pairwise
