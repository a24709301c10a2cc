#include "braid/base/half.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace braid {
namespace {

TEST(HalfTest, RoundTripsEveryHalf) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    auto bits = static_cast<std::uint16_t>(h);
    float f = half_to_float(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
      continue;
    }
    EXPECT_EQ(float_to_half(f), bits) << h;
  }
}

TEST(HalfTest, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);           // tie, even stays
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);       // tie, rounds up to even
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                   // overflows to Inf
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);                   // tie at the smallest subnormal
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);
}

TEST(HalfTest, Bf16RoundTripsAndRounds) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    auto bits = static_cast<std::uint16_t>(b);
    float f = bf16_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16(f), bits) << b;
  }
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);  // tie to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace braid
