#include <gtest/gtest.h>

#include "braid/compress/compressed_call.h"

namespace braid::compress {
namespace {

TEST(ShardBoundsTest, ShardsTileTheTensorOnAlignedBoundaries) {
  for (std::size_t count : {0, 1, 5, 1000, 1024, 1025, 4096 * 3 + 17}) {
    for (int parts = 1; parts <= 5; ++parts) {
      for (std::size_t align : {1, 16, 1024}) {
        std::size_t next = 0, smallest = count, largest = 0;
        for (int p = 0; p < parts; ++p) {
          ShardBounds s = shard_bounds(count, parts, p, align);
          EXPECT_EQ(s.begin, next);
          EXPECT_LE(s.begin, s.end);
          if (s.end != count) {
            EXPECT_EQ(s.end % align, 0u);
          }
          next = s.end;
          smallest = std::min(smallest, s.size());
          largest = std::max(largest, s.size());
        }
        EXPECT_EQ(next, count) << count << " " << parts << " " << align;
        if (count >= parts * align) {
          EXPECT_LE(largest - smallest, 2 * align) << count << " " << parts << " " << align;
        }
      }
    }
  }
}

TEST(ShardBoundsTest, RingVolumeIsTwoNMinusOneOverN) {
  EXPECT_EQ(ring_allreduce_wire_bytes(1000, 1, 0), 0u);
  EXPECT_EQ(ring_allreduce_wire_bytes(1000, 2, 1), 4000u);  // 2(n-1)/n of 4000 bytes
  EXPECT_EQ(ring_allreduce_wire_bytes(1200, 4, 3), 7200u);
  std::uint64_t total = 0;  // uneven blocks: ranks differ, the sum does not
  for (int r = 0; r < 3; ++r) total += ring_allreduce_wire_bytes(10, 3, r);
  EXPECT_EQ(total, 2u * 2 * 10 * 4);
}

}  // namespace
}  // namespace braid::compress
