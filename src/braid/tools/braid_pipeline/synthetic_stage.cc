#include "synthetic_stage.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "braid/base/clock.h"

namespace braid::tools {
namespace {

constexpr int kN = 32;  // the work unit: one 32x32 by 32x32 float matrix product (~65 kflop)

// Runs `iterations` work units; the result feeds the next iteration so none can be skipped.
float run_work(std::int64_t iterations) {
  static thread_local std::array<float, kN * kN> a, b, c;
  for (int i = 0; i < kN * kN; ++i)
    a[static_cast<std::size_t>(i)] = 1e-3f * static_cast<float>(i % 7), b[static_cast<std::size_t>(i)] = 1e-3f;
  for (std::int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kN; ++i) {
      for (int j = 0; j < kN; ++j) {
        float sum = 0;
        for (int k = 0; k < kN; ++k)
          sum += a[static_cast<std::size_t>(i * kN + k)] * b[static_cast<std::size_t>(k * kN + j)];
        c[static_cast<std::size_t>(i * kN + j)] = sum;
      }
    }
    a[0] = c[static_cast<std::size_t>(it % (kN * kN))];
  }
  return a[0];
}

volatile float g_sink = 0;  // keeps the work observable

}  // namespace

double calibrate_work_rate() {
  std::vector<double> rates;
  std::int64_t iterations = 64;
  for (int round = 0; round < 7; ++round) {
    const std::int64_t start = now_ns();
    g_sink = run_work(iterations);
    const double ms = static_cast<double>(now_ns() - start) * 1e-6;
    if (ms < 5) {  // too short to time well: grow and retry
      iterations *= 4;
      --round;
      continue;
    }
    rates.push_back(static_cast<double>(iterations) / ms);
  }
  // The fastest round: slower ones were interrupted (other processes share the cores), and
  // an action sized by an interrupted round would run shorter than asked whenever it is not.
  return *std::max_element(rates.begin(), rates.end());
}

SyntheticStage::SyntheticStage(SyntheticCosts costs, int chunks, double iterations_per_ms)
    : costs_(costs), chunks_(chunks), iterations_per_ms_(iterations_per_ms) {}

parallel::TensorShape SyntheticStage::input_shape(int) const { return {costs_.activation_elements}; }
parallel::TensorShape SyntheticStage::output_shape(int) const { return {costs_.activation_elements}; }

void SyntheticStage::work(double stage_ms) const {
  const double ms = stage_ms / chunks_;
  if (!costs_.timed) {
    g_sink = run_work(std::llround(ms * iterations_per_ms_));
    return;
  }
  // Work units of ~1/20 of the action (at least one), until the clock says it is over.
  const std::int64_t deadline = now_ns() + std::llround(ms * 1e6);
  const std::int64_t unit = std::max<std::int64_t>(1, std::llround(ms * iterations_per_ms_ / 20));
  do {
    g_sink = run_work(unit);
  } while (now_ns() < deadline);
}

parallel::StageTensor SyntheticStage::tensor() const {
  return {{costs_.activation_elements}, std::vector<float>(static_cast<std::size_t>(costs_.activation_elements), 1.0f)};
}

parallel::StageTensor SyntheticStage::forward(int, int, const parallel::StageTensor&) {
  work(costs_.forward_ms);
  return tensor();
}

parallel::StageTensor SyntheticStage::backward_input(int, int, const parallel::StageTensor&) {
  work(costs_.backward_input_ms);
  return tensor();
}

void SyntheticStage::backward_weight(int, int) { work(costs_.backward_weight_ms); }

}  // namespace braid::tools
