#include "braid/tools/braid_train/mixed_precision_training.h"

#include <cstdlib>
#include <limits>

#include "braid/tools/braid_train/training_common.h"

namespace braid::train {

compress::CompressionPolicy PrecisionPlan::ddp_policy(const TrainConfig& config) const {
  if (wire == compress::CodecId::kNone) return make_policy(config);
  return compress::CompressionPolicy({.codec = {.id = wire}, .min_elements = 0});
}

PrecisionPlan plan_precision(const TrainConfig& config) {
  PrecisionPlan plan{.precision = torch::parse_precision(config.precision)};
  if (plan.precision == torch::Precision::kBf16) plan.wire = compress::CodecId::kBf16;
  if (plan.precision != torch::Precision::kFp16) return plan;
  plan.wire = compress::CodecId::kFp16;
  if (config.loss_scale == "dynamic") {
    plan.scaler.emplace(parallel::LossScalerOptions{});
  } else {
    // A fixed scale: the bounds pin it; an overflow still skips its step.
    double scale = std::strtod(config.loss_scale.c_str(), nullptr);
    plan.scaler.emplace(parallel::LossScalerOptions{.initial_scale = scale, .min_scale = scale, .max_scale = scale});
  }
  return plan;
}

InjectedOverflow::InjectedOverflow(const std::vector<::torch::Tensor>& params, bool active) {
  if (!active || params.empty()) return;
  param_ = params.front();
  hook_ = param_.register_hook([](::torch::Tensor grad) {
    ::torch::Tensor poisoned = grad.clone();
    poisoned.view(-1)[0] = std::numeric_limits<float>::infinity();
    return poisoned;
  });
}

InjectedOverflow::~InjectedOverflow() {
  if (param_.defined()) param_.remove_hook(hook_);
}

}  // namespace braid::train
