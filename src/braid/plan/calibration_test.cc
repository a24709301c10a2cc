// Calibration recovers the parameters of a known model from data it generated.
#include "braid/plan/calibration.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::plan {
namespace {

// A braid-bench style sweep: 64 KiB .. 256 MiB by factors of 4, timed by the ring formula with
// the given alpha and beta, each time multiplied by a deterministic "noise" factor.
std::vector<Sample> sweep(double alpha, double beta, int ranks, double noise = 0) {
  std::vector<Sample> out;
  const double share = (ranks - 1.0) / ranks;
  int i = 0;
  for (double bytes = 64 * 1024; bytes <= 256.0 * 1024 * 1024; bytes *= 4, ++i) {
    const double t = 2 * (ranks - 1) * alpha + 2 * share * bytes * beta;
    out.push_back({bytes, ranks, t * (1 + noise * ((i % 2) ? 1 : -1))});
  }
  return out;
}

TEST(CalibrationTest, RecoversAlphaAndBetaExactly) {
  const double alpha = 7e-6, beta = 1 / 6e9;
  Calibration cal = fit_cost_model(sweep(alpha, beta, 4), Op::kAllreduce, Algorithm::kRing);
  ASSERT_EQ(cal.segments.size(), 1u);
  // Noise-free data: only floating-point rounding separates fit and truth.
  EXPECT_NEAR(cal.segments[0].alpha / alpha, 1, 1e-9);
  EXPECT_NEAR(cal.segments[0].beta / beta, 1, 1e-9);
  EXPECT_LT(cal.rms_relative_error, 1e-9);
  EXPECT_EQ(cal.predictions.size(), 7u);
}

TEST(CalibrationTest, NoisyDataStaysClose) {
  const double alpha = 20e-6, beta = 1 / 2e9;
  Calibration cal = fit_cost_model(sweep(alpha, beta, 2, 0.05), Op::kAllreduce, Algorithm::kRing);
  // +-5% alternating noise moves each estimate by a few percent at most; 15% is a loose bound.
  EXPECT_NEAR(cal.segments[0].alpha / alpha, 1, 0.15);
  EXPECT_NEAR(cal.segments[0].beta / beta, 1, 0.15);
  EXPECT_NEAR(cal.rms_relative_error, 0.05, 0.02);
  EXPECT_LT(cal.max_relative_error, 0.1);
}

TEST(CalibrationTest, JointFitOverRankCounts) {
  std::vector<Sample> samples = sweep(5e-6, 1 / 8e9, 2);
  std::vector<Sample> four = sweep(5e-6, 1 / 8e9, 4);
  samples.insert(samples.end(), four.begin(), four.end());
  Calibration cal = fit_cost_model(samples, Op::kAllreduce, Algorithm::kRing);
  EXPECT_NEAR(cal.segments[0].alpha, 5e-6, 5e-6 * 1e-9);
  EXPECT_NEAR(cal.predict(1e6, 8) / (14 * 5e-6 + 2 * 7.0 / 8 * 1e6 / 8e9), 1, 1e-9);  // extrapolates to 8 ranks
}

TEST(CalibrationTest, SegmentsFollowAnAlgorithmSwitch) {
  // Small sizes fast per byte (cache), large sizes slow: two regimes, one breakpoint.
  std::vector<Sample> small = sweep(3e-6, 1 / 20e9, 2);
  std::vector<Sample> samples;
  for (const Sample& s : small) {
    const bool large = s.bytes > 4 * 1024 * 1024;
    const double t = large ? 2 * 30e-6 + s.bytes / 3e9 : s.seconds;
    samples.push_back({s.bytes, 2, t});
  }
  // Denser sweep so each regime has enough points.
  for (double bytes = 96 * 1024; bytes <= 200.0 * 1024 * 1024; bytes *= 4) {
    const bool large = bytes > 4 * 1024 * 1024;
    samples.push_back({bytes, 2, large ? 2 * 30e-6 + bytes / 3e9 : 2 * 3e-6 + bytes / 20e9});
  }
  Calibration one = fit_cost_model(samples, Op::kAllreduce, Algorithm::kRing);
  Calibration two = fit_segments(samples, Op::kAllreduce, Algorithm::kRing, 3);
  EXPECT_GT(one.max_relative_error, 0.25);
  ASSERT_EQ(two.segments.size(), 2u);
  EXPECT_LT(two.max_relative_error, 1e-6);
  EXPECT_NEAR(two.segments[1].beta * 3e9, 1, 1e-6);
}

TEST(CalibrationTest, EvaluateScoresTheModelOnOtherSamples) {
  const double alpha = 6e-6, beta = 1 / 4e9;
  const Calibration model = fit_cost_model(sweep(alpha, beta, 2), Op::kAllreduce, Algorithm::kRing);
  // Held-out runs of the same model, +-10% off: each error is 1 / (1 +- 0.1) - 1, whatever the size.
  std::vector<Sample> later = sweep(alpha, beta, 2, 0.1);
  std::reverse(later.begin(), later.end());  // any order: the result is sorted by size
  const Calibration held_out = evaluate(model, later);
  ASSERT_EQ(held_out.segments.size(), model.segments.size());
  EXPECT_EQ(held_out.segments[0].alpha, model.segments[0].alpha);
  ASSERT_EQ(held_out.predictions.size(), 7u);
  for (std::size_t i = 0; i < held_out.predictions.size(); ++i) {
    const Prediction& p = held_out.predictions[i];
    const double expected = 1 / (1 + ((i % 2) ? 0.1 : -0.1)) - 1;  // sweep() alternates, smallest size first
    EXPECT_NEAR(p.relative_error, expected, 1e-9) << p.sample.bytes;  // the fit is exact up to rounding
  }
  EXPECT_NEAR(held_out.max_relative_error, 1 / 0.9 - 1, 1e-9);
  const double rms = std::sqrt((4 * std::pow(1 / 0.9 - 1, 2) + 3 * std::pow(1 / 1.1 - 1, 2)) / 7);
  EXPECT_NEAR(held_out.rms_relative_error, rms, 1e-9);
  // The model extrapolates to a world size it never saw, exactly where the formula holds.
  EXPECT_LT(evaluate(model, sweep(alpha, beta, 4)).max_relative_error, 1e-9);
}

TEST(CalibrationTest, EvaluateRejectsBadInput) {
  const Calibration model = fit_cost_model(sweep(1e-6, 1e-9, 2), Op::kAllreduce, Algorithm::kRing);
  EXPECT_THROW(evaluate(model, {}), InvalidArgument);
  EXPECT_THROW(evaluate(model, {{1024, 2, 0}}), InvalidArgument);
  EXPECT_THROW(evaluate(model, {{1024, 1, 1e-5}}), InvalidArgument);
  EXPECT_THROW(evaluate(Calibration{}, sweep(1e-6, 1e-9, 2)), InvalidArgument);
}

TEST(CalibrationTest, NegativeInterceptIsClampedToZero) {
  // Pure bandwidth with a slight superlinearity would fit a negative alpha; it must be clamped.
  std::vector<Sample> samples;
  for (double bytes = 1e6; bytes <= 1e9; bytes *= 4) samples.push_back({bytes, 2, bytes / 1e9 * (1 + bytes / 1e10)});
  Calibration cal = fit_cost_model(samples, Op::kAllreduce, Algorithm::kRing);
  EXPECT_GE(cal.segments[0].alpha, 0);
  EXPECT_GT(cal.segments[0].beta, 0);
}

TEST(CalibrationTest, BadInputs) {
  EXPECT_THROW(fit_cost_model({}, Op::kAllreduce, Algorithm::kRing), InvalidArgument);
  EXPECT_THROW(fit_cost_model({{1024, 2, 1e-5}, {1024, 2, 1.1e-5}}, Op::kAllreduce, Algorithm::kRing), InvalidArgument);
  EXPECT_THROW(fit_cost_model({{1024, 1, 1e-5}, {2048, 1, 2e-5}}, Op::kAllreduce, Algorithm::kRing), InvalidArgument);
  EXPECT_THROW(fit_cost_model({{1024, 2, 0}, {2048, 2, 2e-5}}, Op::kAllreduce, Algorithm::kRing), InvalidArgument);
  EXPECT_THROW(fit_cost_model(sweep(1e-6, 1e-9, 2), Op::kAllreduce, Algorithm::kHierarchical), InvalidArgument);
}

}  // namespace
}  // namespace braid::plan
