#include "braid/transport/tcp/stripe_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace braid::tcp {
namespace {

TEST(StripePlanTest, SmallMessagesAndOneStreamAreNeverStriped) {
  for (std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{1}, kMinStripeBytes - 1, 2 * kMinStripeBytes - 1}) {
    EXPECT_EQ(stripe_count(bytes, 4), 1) << bytes;
  }
  EXPECT_EQ(stripe_count(std::uint64_t{1} << 30, 1), 1);
  EXPECT_EQ(stripe_count(std::uint64_t{1} << 30, 0), 1);
}

TEST(StripePlanTest, EveryStripeGetsAtLeastTheMinimum) {
  EXPECT_EQ(stripe_count(2 * kMinStripeBytes, 4), 2);
  EXPECT_EQ(stripe_count(3 * kMinStripeBytes - 1, 4), 2);
  EXPECT_EQ(stripe_count(3 * kMinStripeBytes, 4), 3);
  EXPECT_EQ(stripe_count(100 * kMinStripeBytes, 4), 4);
  EXPECT_EQ(stripe_count(std::uint64_t{1} << 40, 64), kMaxStreams);
}

// Around every boundary: the stripes tile the message exactly, in order, none empty, all but
// the last a multiple of kStripeAlign.
TEST(StripePlanTest, StripesTileTheMessageAroundTheBoundaries) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t k = 1; k <= 9; ++k) {
    for (std::int64_t d : {-4097, -1, 0, 1, 4095, 4097}) {
      sizes.push_back(static_cast<std::uint64_t>(static_cast<std::int64_t>(k * kMinStripeBytes) + d));
    }
  }
  sizes.push_back((std::uint64_t{1} << 30) + 3);
  for (int streams = 1; streams <= kMaxStreams; ++streams) {
    for (std::uint64_t bytes : sizes) {
      const int count = stripe_count(bytes, streams);
      ASSERT_GE(count, 1);
      ASSERT_LE(count, streams);
      std::uint64_t next = 0;
      for (int i = 0; i < count; ++i) {
        StripeSpan s = stripe_span(bytes, count, i);
        ASSERT_EQ(s.offset, next) << bytes << " over " << streams << ", stripe " << i;
        ASSERT_GT(s.bytes, 0u) << bytes << " over " << streams << ", stripe " << i;
        if (i + 1 < count) {
          ASSERT_EQ(s.bytes % kStripeAlign, 0u);
          ASSERT_GE(s.bytes, kMinStripeBytes - kStripeAlign);
        }
        next += s.bytes;
      }
      ASSERT_EQ(next, bytes) << bytes << " over " << streams;
    }
  }
}

TEST(StripePlanTest, OneStripeIsTheWholeMessage) {
  StripeSpan s = stripe_span(12345, 1, 0);
  EXPECT_EQ(s.offset, 0u);
  EXPECT_EQ(s.bytes, 12345u);
}

}  // namespace
}  // namespace braid::tcp
