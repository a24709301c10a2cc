// SplitMix64 against the reference stream, and the bounded draw's range.
#include "braid/base/splitmix64.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace braid {
namespace {

TEST(SplitMix64Test, MatchesTheReferenceSequence) {
  // Vigna's splitmix64.c from state 0: the stream every rank must reproduce.
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.next(), 0x06c45d188009454full);
}

TEST(SplitMix64Test, UniformBelowStaysInRange) {
  SplitMix64 rng(5);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(uniform_below(rng, 1), 0u);
  for (std::uint64_t range : {2ull, 3ull, 1000ull, (1ull << 63) + 1, ~0ull}) {
    for (int i = 0; i < 1000; ++i) EXPECT_LT(uniform_below(rng, range), range);
  }
}

}  // namespace
}  // namespace braid
