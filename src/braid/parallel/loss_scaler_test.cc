// DynamicLossScaler's rule as a value (parallel/loss_scaler.h): back-off on overflow (with
// hysteresis), growth after growth_interval clean steps, the bounds, checkpoints, bad options;
// all_finite on the values that matter. agree_on_overflow runs through real ranks in the
// LibTorch mixed-precision tests.
#include "braid/parallel/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

TEST(DynamicLossScalerTest, OverflowsBackOffAndCleanRunsGrow) {
  DynamicLossScaler s({.initial_scale = 1024, .growth_interval = 3});
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_TRUE(s.update(false));  // the third clean step in a row
  EXPECT_EQ(s.scale(), 2048);
  EXPECT_FALSE(s.update(true));  // skipped, halved, the clean run restarts
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.skipped_steps(), 1);
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.clean_steps_in_a_row(), 2);
}

TEST(DynamicLossScalerTest, HysteresisBacksOffOnlyAfterOverflowsInARow) {
  DynamicLossScaler s({.initial_scale = 256, .growth_interval = 100, .hysteresis = 2});
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 256);  // one overflow: skipped, scale kept
  EXPECT_TRUE(s.update(false));
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 256);  // the run was broken
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 128);
  EXPECT_EQ(s.skipped_steps(), 3);
}

TEST(DynamicLossScalerTest, TheScaleStaysWithinItsBounds) {
  DynamicLossScaler s({.initial_scale = 4, .growth_interval = 1, .min_scale = 1, .max_scale = 16});
  for (int i = 0; i < 10; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 1);
  for (int i = 0; i < 10; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 16);
}

TEST(DynamicLossScalerTest, StateRoundTripsAndBadStatesAreRefused) {
  DynamicLossScaler a({.initial_scale = 512, .growth_interval = 4, .hysteresis = 2});
  for (bool o : {false, true, false, false, true}) a.update(o);
  DynamicLossScaler b({.initial_scale = 512, .growth_interval = 4, .hysteresis = 2});
  b.restore(a.state());
  EXPECT_EQ(b.state(), a.state());
  for (bool o : {true, false, false, false, false, true, true}) EXPECT_EQ(a.update(o), b.update(o));
  EXPECT_EQ(b.state(), a.state());
  EXPECT_THROW(b.restore({.scale = std::numeric_limits<double>::infinity()}), InvalidArgument);
  EXPECT_THROW(b.restore({.scale = 1e9}), InvalidArgument);  // above max_scale
  EXPECT_THROW(b.restore({.scale = 8, .clean = -1}), InvalidArgument);
}

TEST(DynamicLossScalerTest, BadOptionsAreRefusedNamingTheField) {
  auto message = [](LossScalerOptions o) {
    try {
      DynamicLossScaler s(o);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({.initial_scale = 0}).find("initial_scale"), std::string::npos);
  EXPECT_NE(message({.growth_factor = 1}).find("growth_factor"), std::string::npos);
  EXPECT_NE(message({.backoff_factor = 1}).find("backoff_factor"), std::string::npos);
  EXPECT_NE(message({.growth_interval = 0}).find("growth_interval"), std::string::npos);
  EXPECT_NE(message({.hysteresis = 0}).find("hysteresis"), std::string::npos);
  EXPECT_NE(message({.min_scale = 4, .max_scale = 2}).find("min_scale"), std::string::npos);
}

TEST(AllFiniteTest, FindsInfAndNanAnywhere) {
  std::vector<float> v(1001, 1.5f);
  EXPECT_TRUE(all_finite(v));
  EXPECT_TRUE(all_finite({}));
  v[1000] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(all_finite(v));
  v[1000] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(all_finite(v));
  v[1000] = 1.0f;
  v[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(all_finite(v));
  v[3] = std::numeric_limits<float>::max();  // finite, however large
  EXPECT_TRUE(all_finite(v));
}

}  // namespace
}  // namespace braid::parallel
