#include "braid/tools/braid_train/mixed_precision_training.h"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>

#include "braid/tools/braid_train/training_common.h"

namespace braid::train {

compress::CompressionPolicy PrecisionPlan::ddp_policy(const TrainConfig& config) const {
  if (wire == compress::CodecId::kNone) return make_policy(config);
  return compress::CompressionPolicy({.codec = {.id = wire}, .min_elements = 0});
}

torch::ZeroOptions PrecisionPlan::zero_options(const ZeroPlusPlus& zero_pp) const {
  compress::CodecId codec = zero_pp.weight_codec(wire);
  // 16-bit parameters: bf16 allgathered in place (qwZ's int8 keeps the fp32 flat buffer).
  if (sixteen_bit_parameters() && codec == wire) return {.parameter_dtype = parameter_dtype};
  if (codec == compress::CodecId::kNone) return {};
  return {.quantize_weights = true, .weight_codec = codec};
}

bool PrecisionPlan::unscale_or_skip(const Communicator& world, std::int64_t step,
                                    const std::function<bool(double)>& unscale) {
  if (!scaler) return true;
  double scale = scaler->scale();
  if (scaler->update(unscale(scale))) return true;
  skipped_steps.push_back(step);
  say(world, fmt::format("  step {}: the fp16 gradients overflowed at loss scale {}: step skipped on every rank, the "
                         "scale is now {}",
                         step, scale, scaler->scale()));
  return false;
}

void PrecisionPlan::report(RunSummary& summary) const {
  summary.precision = torch::to_string(precision);
  summary.parameter_dtype = sixteen_bit_parameters() ? "bf16" : "fp32";
  summary.skipped_steps = skipped_steps;
  if (scaler) summary.loss_scale = scaler->scale();
}

PrecisionPlan plan_precision(const TrainConfig& config) {
  PrecisionPlan plan{.precision = torch::parse_precision(config.precision)};
  if (plan.precision == torch::Precision::kBf16) {
    plan.wire = compress::CodecId::kBf16;
    // The data-parallel trainer's ZeRO and the mesh's stage 3 (the mesh's stage 1 keeps fp32
    // storage: docs/zero.md "On the mesh").
    bool stored_16 = config.zero > 0 && (!config.uses_mesh() || config.zero == 3);
    if (stored_16 && config.param_storage == "compute") plan.parameter_dtype = ::torch::kBFloat16;
  }
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

void poison_accumulated_gradient(const std::vector<::torch::Tensor>& params) {
  if (params.empty()) return;
  ::torch::NoGradGuard no_grad;
  ::torch::Tensor param = params.front();
  if (!param.grad().defined()) param.mutable_grad() = ::torch::zeros_like(param);
  param.mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
}

bool InjectedOverflow::injects_at(const TrainConfig& config, std::int64_t step, const Communicator& world) {
  return config.inject_overflow == step && world.rank() == world.size() - 1;
}

}  // namespace braid::train
