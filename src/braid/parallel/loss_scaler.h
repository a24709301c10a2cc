// DynamicLossScaler: the loss scale of fp16 mixed-precision training (Micikevicius et al.,
// "Mixed Precision Training", 2018; PyTorch's GradScaler, DeepSpeed's DynamicLossScaler), and
// the one decision of it that must be identical on every rank: whether this step overflowed.
//
//   DynamicLossScaler scaler({.initial_scale = 65536});
//   loss * scaler.scale() -> backward -> gradients (scaled) -> reduced in fp16 on the wire
//   bool overflow = agree_on_overflow(comm, !all_finite(my_gradient_shard));
//   if (scaler.update(overflow)) { unscale by 1 / scale-used; step } else { skip the step }
//
// fp16 holds magnitudes up to 65504 and down to 6e-8 (subnormal): small gradients underflow to
// zero unless the loss (hence every gradient) is multiplied by a large scale, and a scale too
// large overflows to inf. The dynamic rule finds the largest scale that does not overflow: an
// overflow skips the step (its gradients are garbage) and multiplies the scale by
// backoff_factor; growth_interval steps in a row without one multiply it by growth_factor.
// With hysteresis h (DeepSpeed's), only the h-th overflow in a row backs the scale off (the
// steps are still skipped), which rides out isolated spikes.
//
// Why the agreement: under ZeRO each rank checks only its shard of the averaged gradient, so an
// inf in one shard is seen by one rank; if that rank alone skipped, the replicas would diverge
// (its shard of the parameters would not move while the others' did) and the scales would
// differ. agree_on_overflow is one 4-byte allreduce (max) over the group, so every rank takes the
// same decision and keeps the same scale: the scaler's state is a pure function of the agreed
// overflow sequence.
//
// The scaler is a value (no communicator): update() is deterministic, tested without ranks.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "braid/comm/communicator.h"

namespace braid::parallel {

struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16, PyTorch's default
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;  // clean steps before the scale grows
  int hysteresis = 1;                   // overflows in a row before it backs off (1: every one)
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24: past it nothing fp16 represents needs more
};

class DynamicLossScaler {
 public:
  // InvalidArgument naming the field for an initial scale outside [min_scale, max_scale] (both
  // finite, positive), a growth factor not > 1, a backoff factor outside (0, 1), an interval or
  // hysteresis < 1.
  explicit DynamicLossScaler(LossScalerOptions options = {});

  // The scale to multiply this step's loss by.
  double scale() const { return scale_; }
  // Records this step's (agreed) outcome and moves the scale; returns whether the optimizer
  // should step (false: an overflow, the step is skipped). The scale used this step is scale()
  // before the call.
  bool update(bool overflow);

  std::int64_t skipped_steps() const { return skipped_; }
  std::int64_t clean_steps_in_a_row() const { return clean_; }
  const LossScalerOptions& options() const { return options_; }

  // For checkpoints: the whole state, and a scaler that continues from it.
  struct State {
    double scale = 0;
    std::int64_t clean = 0, skipped = 0;
    int overflows_in_a_row = 0;
    bool operator==(const State&) const = default;
  };
  State state() const { return {scale_, clean_, skipped_, overflows_}; }
  void restore(const State& state);

 private:
  LossScalerOptions options_;
  double scale_;
  std::int64_t clean_ = 0, skipped_ = 0;
  int overflows_ = 0;
};

// Whether any value is inf or NaN.
bool all_finite(std::span<const float> values);

// Whether any rank of `group` saw an overflow: one allreduce (max) of a flag, so every rank
// gets the same answer. Collective over `group`.
bool agree_on_overflow(Communicator& group, bool local_overflow);

}  // namespace braid::parallel
