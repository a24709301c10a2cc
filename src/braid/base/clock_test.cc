#include "braid/base/clock.h"

#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

TEST(DeadlineTest, NegativeAndInfiniteMeanNever) {
  EXPECT_TRUE(Deadline::after(Seconds(-1)).is_never());
  EXPECT_TRUE(Deadline::after(Seconds(INFINITY)).is_never());
  EXPECT_FALSE(Deadline::after(Seconds(1)).is_never());
}

// NaN compared as neither negative nor large and expired at once ("timed out after 0.0 s").
TEST(DeadlineTest, NanIsRefused) { EXPECT_THROW(Deadline::after(Seconds(NAN)), InvalidArgument); }

TEST(DeadlineTest, MinusOneTimeoutFromTheEnvironmentIsNever) {
  ::setenv("BRAID_TIMEOUT", "-1", 1);
  EXPECT_TRUE(Deadline::from_env().is_never());
  ::unsetenv("BRAID_TIMEOUT");
}

}  // namespace
}  // namespace braid
