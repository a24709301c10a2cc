#include "braid/collectives/patterns/chain.h"

#include <gtest/gtest.h>

namespace braid::chain {
namespace {

TEST(ChainPatternTest, SegmentsTileTheMessage) {
  for (std::size_t elem : {1u, 2u, 4u, 8u}) {
    for (std::int64_t count : {1, 7, 4096, 1000003, 64 << 20}) {
      std::int64_t per = segment_elements(count, elem);
      ASSERT_GE(per, 1);
      EXPECT_LE(per * static_cast<std::int64_t>(elem), kMaxSegmentBytes);
      std::int64_t next = 0, segments = segment_count(count, per);
      for (std::int64_t k = 0; k < segments; ++k) {
        Segment s = segment(count, per, k);
        EXPECT_EQ(s.offset, next);
        EXPECT_GT(s.count, 0);
        next += s.count;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(ChainPatternTest, SmallMessagesGoInOnePieceLargeOnesInMany) {
  EXPECT_EQ(segment_count(1000, segment_elements(1000, 4)), 1);
  std::int64_t big = 64 << 20;
  EXPECT_EQ(segment_elements(big, 4) * 4, kMaxSegmentBytes);
  EXPECT_EQ(segment_count(1 << 20, segment_elements(1 << 20, 4)), 16);  // 4 MiB: 256 KiB pieces
}

TEST(ChainPatternTest, ChainRunsFromTheRootAroundTheRanks) {
  EXPECT_EQ(previous(0), -1);
  EXPECT_EQ(next(3, 4), -1);
  EXPECT_EQ(next(1, 4), 2);
  EXPECT_EQ(to_absolute(1, 3, 4), 0);
  EXPECT_EQ(to_relative(0, 3, 4), 1);
}

}  // namespace
}  // namespace braid::chain
