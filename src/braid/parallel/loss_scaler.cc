#include "braid/parallel/loss_scaler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"

namespace braid::parallel {
namespace {

void check(const LossScalerOptions& o) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "DynamicLossScaler"}, detail); };
  auto finite_positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!finite_positive(o.min_scale) || !finite_positive(o.max_scale) || o.min_scale > o.max_scale) {
    bad(fmt::format("min_scale {} and max_scale {}: need 0 < min_scale <= max_scale, both finite", o.min_scale, o.max_scale));
  }
  if (!std::isfinite(o.initial_scale) || o.initial_scale < o.min_scale || o.initial_scale > o.max_scale) {
    bad(fmt::format("initial_scale {}: must be within [min_scale {}, max_scale {}]", o.initial_scale, o.min_scale,
                    o.max_scale));
  }
  if (!(std::isfinite(o.growth_factor) && o.growth_factor > 1)) bad(fmt::format("growth_factor {}: must be > 1", o.growth_factor));
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) bad(fmt::format("backoff_factor {}: must be in (0, 1)", o.backoff_factor));
  if (o.growth_interval < 1) bad(fmt::format("growth_interval {}: must be at least 1", o.growth_interval));
  if (o.hysteresis < 1) bad(fmt::format("hysteresis {}: must be at least 1", o.hysteresis));
}

}  // namespace

DynamicLossScaler::DynamicLossScaler(LossScalerOptions options) : options_(options), scale_(options.initial_scale) {
  check(options_);
}

bool DynamicLossScaler::update(bool overflow) {
  if (overflow) {
    ++skipped_;
    clean_ = 0;
    if (++overflows_ >= options_.hysteresis) {
      scale_ = std::max(options_.min_scale, scale_ * options_.backoff_factor);
      overflows_ = 0;
    }
    return false;
  }
  overflows_ = 0;
  if (++clean_ >= options_.growth_interval) {
    scale_ = std::min(options_.max_scale, scale_ * options_.growth_factor);
    clean_ = 0;
  }
  return true;
}

void DynamicLossScaler::restore(const State& state) {
  if (!std::isfinite(state.scale) || state.scale < options_.min_scale || state.scale > options_.max_scale ||
      state.clean < 0 || state.skipped < 0 || state.overflows_in_a_row < 0) {
    throw InvalidArgument({.op = "DynamicLossScaler::restore"},
                          fmt::format("scale {} (allowed [{}, {}]), {} clean steps, {} skipped, {} overflows in a row",
                                      state.scale, options_.min_scale, options_.max_scale, state.clean, state.skipped,
                                      state.overflows_in_a_row));
  }
  scale_ = state.scale;
  clean_ = state.clean;
  skipped_ = state.skipped;
  overflows_ = state.overflows_in_a_row;
}

bool all_finite(std::span<const float> values) {
  // A sum of x * 0 is NaN exactly when some x is inf or NaN: one pass the compiler vectorises.
  float probe = 0.0f;
  for (float v : values) probe += v * 0.0f;
  return probe == 0.0f;
}

bool agree_on_overflow(Communicator& group, bool local_overflow) {
  std::int32_t flag = local_overflow ? 1 : 0;
  allreduce(group, &flag, &flag, 1, DType::kI32, ReduceOp::kMax);
  return flag != 0;
}

}  // namespace braid::parallel
