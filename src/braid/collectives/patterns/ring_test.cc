#include "braid/collectives/patterns/ring.h"

#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace braid::ring {
namespace {

TEST(RingPatternTest, BlocksTileTheBufferForAnyCount) {
  for (int n = 1; n <= 7; ++n) {
    for (std::int64_t count : {0, 1, 2, 5, 6, 7, 100, 1001}) {
      std::int64_t next = 0;
      for (int i = 0; i < n; ++i) {
        Block b = block(count, n, i);
        EXPECT_EQ(b.offset, next);
        EXPECT_GE(b.count, count / n);
        EXPECT_LE(b.count, count / n + 1);
        next += b.count;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(RingPatternTest, ReduceScatterLeavesEachRankOwningADistinctBlock) {
  for (int n = 1; n <= 7; ++n) {
    std::set<int> owned;
    for (int r = 0; r < n; ++r) owned.insert(owned_block_after_reduce_scatter(r, n));
    EXPECT_EQ(static_cast<int>(owned.size()), n);
    for (int r = 0; r < n; ++r) {
      for (int s = 0; s < n - 1; ++s) {
        // What rank r receives in step s is what its left neighbour sends.
        EXPECT_EQ(reduce_scatter_recv_block(r, s, n), reduce_scatter_send_block(left_of(r, n), s, n));
        EXPECT_EQ(allgather_recv_block(r, s, n), allgather_send_block(left_of(r, n), s, n));
      }
      // The last block reduced is the one owned; allgather starts by sending it.
      EXPECT_EQ(reduce_scatter_recv_block(r, n - 2 < 0 ? 0 : n - 2, n), n > 1 ? owned_block_after_reduce_scatter(r, n) : 0);
      EXPECT_EQ(allgather_send_block(r, 0, n), owned_block_after_reduce_scatter(r, n));
    }
  }
}

TEST(RingPatternTest, AllgatherDeliversEveryBlockToEveryRank) {
  for (int n = 2; n <= 7; ++n) {
    for (int r = 0; r < n; ++r) {
      std::set<int> have{owned_block_after_reduce_scatter(r, n)};
      for (int s = 0; s < n - 1; ++s) have.insert(allgather_recv_block(r, s, n));
      EXPECT_EQ(static_cast<int>(have.size()), n);
    }
  }
}

TEST(RingPatternTest, ByRankSchedulesStartAndEndAtTheRanksOwnBlock) {
  for (int n = 2; n <= 7; ++n) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(allgather_by_rank_send_block(r, 0, n), r);
      EXPECT_EQ(reduce_scatter_by_rank_recv_block(r, n - 2, n), r);  // the last block reduced
      std::set<int> gathered{r}, reduced;
      for (int s = 0; s < n - 1; ++s) {
        EXPECT_EQ(allgather_by_rank_recv_block(r, s, n), allgather_by_rank_send_block(left_of(r, n), s, n));
        EXPECT_EQ(reduce_scatter_by_rank_recv_block(r, s, n), reduce_scatter_by_rank_send_block(left_of(r, n), s, n));
        // A rank forwards in step s+1 what it received in step s.
        if (s + 1 < n - 1) {
          EXPECT_EQ(allgather_by_rank_send_block(r, s + 1, n), allgather_by_rank_recv_block(r, s, n));
          EXPECT_EQ(reduce_scatter_by_rank_send_block(r, s + 1, n), reduce_scatter_by_rank_recv_block(r, s, n));
        }
        gathered.insert(allgather_by_rank_recv_block(r, s, n));
        reduced.insert(reduce_scatter_by_rank_recv_block(r, s, n));
      }
      EXPECT_EQ(static_cast<int>(gathered.size()), n);
      EXPECT_EQ(static_cast<int>(reduced.size()), n - 1);
      EXPECT_FALSE(reduced.contains(reduce_scatter_by_rank_send_block(r, 0, n)));
    }
  }
}

}  // namespace
}  // namespace braid::ring
