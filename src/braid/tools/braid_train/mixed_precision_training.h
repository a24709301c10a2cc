// braid-train --precision, for both trainers (trainer.cc: data parallel, --zero 0..3;
// mesh_trainer.cc: dp x pp x tp, --zero 0 and 1): which dtype the forward computes in, which
// codec the gradients (and ZeRO's parameter allgather) travel in, and the loss scale of fp16
// (torch/mixed_precision.h, parallel/loss_scaler.h; docs/zero.md "Mixed precision").
//
//   bf16: forward under CPU autocast in bf16; gradients reduced in bf16 (DDP: the allreduce's
//         codec; ZeRO: zero_codec) and, with ZeRO, parameters allgathered in bf16 from exact
//         fp32 master shards, into bf16 parameter storage (--param-storage compute, the default
//         on the data-parallel trainer: evaluation then runs under autocast too) or fp32 storage
//         (--param-storage fp32, and the mesh). No loss scale: bf16 has fp32's range.
//   fp16: compute fp32 (LibTorch 1.13 has no fp16 CPU matmul); gradients and ZeRO's parameters
//         in fp16 on the wire under a loss scale (dynamic by default): the loss is multiplied by
//         the scale before backward, the averaged gradients divided by it after, and a step
//         whose gradients overflowed anywhere is skipped on every rank (the decision agreed in
//         one allreduce over the whole job) while the scale backs off.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/compress/codec_spec.h"
#include "braid/compress/compression_policy.h"
#include "braid/parallel/loss_scaler.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"
#include "braid/tools/braid_train/zero_pp.h"
#include "braid/torch/mixed_precision.h"
#include "braid/torch/zero_optimizer.h"

namespace braid::train {

struct PrecisionPlan {
  torch::Precision precision = torch::Precision::kFp32;
  compress::CodecId wire = compress::CodecId::kNone;  // the gradients' (and ZeRO's parameters') codec
  std::optional<parallel::DynamicLossScaler> scaler;  // fp16 only
  std::vector<std::int64_t> skipped_steps;            // fp16: steps whose gradients overflowed (1-based)
  // ZeRO's full (stages 1-2) and gathered (stage 3) parameters: kBFloat16 under --precision bf16
  // with --param-storage compute and --zero 1|2|3 on the data-parallel trainer or --zero 3 on the
  // mesh; else kFloat32.
  ::torch::ScalarType parameter_dtype = ::torch::kFloat32;
  bool sixteen_bit_parameters() const { return parameter_dtype != ::torch::kFloat32; }

  // DDP's allreduce policy: the wire codec on every tensor, or --compress's policy for fp32.
  compress::CompressionPolicy ddp_policy(const TrainConfig& config) const;
  // ZeRO-1/2's parameter allgather: with 16-bit parameters, bf16 in place from the fp32 master
  // shards; else in the wire codec (--zero-pp qwz: int8) from exact fp32 master shards into
  // fp32 flat parameters (qwZ's path); plain fp32 allgather in place without one.
  torch::ZeroOptions zero_options(const ZeroPlusPlus& zero_pp = {}) const;
  // The scale this step's loss is multiplied by before backward (1 without fp16's scaler).
  double loss_scale() const { return scaler ? scaler->scale() : 1.0; }

  // Called once per step after the gradients are reduced. Under a loss scale: `unscale(scale)`
  // divides this rank's gradients by the scale and returns the overflow decision agreed over
  // the whole job; the scaler moves, and on an overflow the step is recorded, announced once
  // on `world` and false returned (skip the optimizer, on every rank alike). Without a scaler
  // returns true and calls nothing. `step` is 1-based.
  bool unscale_or_skip(const Communicator& world, std::int64_t step, const std::function<bool(double)>& unscale);
  // The run report's precision, final loss scale and skipped steps.
  void report(RunSummary& summary) const;
};

// REQUIRES: validate() accepted the config.
PrecisionPlan plan_precision(const TrainConfig& config);

// --inject-overflow: for the backward(s) a scope spans, the first parameter's gradient gets
// +inf in its first element (on the rank that holds an active scope), before autograd
// accumulates it (so DDP's overlapped bucket hooks see it). A leaf's hook runs only when the
// gradient is accumulated, not under torch::autograd::grad (LibTorch 1.13), which the
// pipeline's zero-bubble weight pass uses: the mesh poisons the accumulated gradient instead
// (poison_accumulated_gradient).
class InjectedOverflow {
 public:
  InjectedOverflow(const std::vector<::torch::Tensor>& params, bool active);
  ~InjectedOverflow();
  InjectedOverflow(const InjectedOverflow&) = delete;
  InjectedOverflow& operator=(const InjectedOverflow&) = delete;

  // Whether `rank` poisons its gradients at 1-based step `step`: the world's last rank (on the
  // mesh: the last replica's last stage's last TP rank), at --inject-overflow's step, so that
  // one rank alone sees the inf and the skip everywhere proves the agreement.
  static bool injects_at(const TrainConfig& config, std::int64_t step, const Communicator& world);

 private:
  ::torch::Tensor param_;
  unsigned hook_ = 0;
};

// The first parameter's accumulated .grad gets +inf in its first element (a parameter
// without a gradient gets a zero one first), after the backward and before the reduce.
void poison_accumulated_gradient(const std::vector<::torch::Tensor>& params);

}  // namespace braid::train
