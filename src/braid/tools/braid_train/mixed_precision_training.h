// braid-train --precision on the data-parallel trainer: which dtype the forward computes in,
// which codec the gradients (and ZeRO's parameter allgather) travel in, and the loss scale of
// fp16 (torch/mixed_precision.h, parallel/loss_scaler.h; docs/zero.md "Mixed precision").
//
//   bf16: forward under CPU autocast in bf16; gradients reduced in bf16 (DDP: the allreduce's
//         codec; ZeRO: zero_codec) and, with ZeRO, parameters allgathered in bf16 from exact
//         fp32 master shards. No loss scale: bf16 has fp32's range.
//   fp16: compute fp32 (LibTorch 1.13 has no fp16 CPU matmul); gradients and ZeRO's parameters
//         in fp16 on the wire under a loss scale (dynamic by default): the loss is multiplied by
//         the scale before backward, the averaged gradients divided by it after, and a step
//         whose gradients overflowed anywhere is skipped on every rank (the decision agreed in
//         one allreduce) while the scale backs off.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "braid/compress/codec_spec.h"
#include "braid/compress/compression_policy.h"
#include "braid/parallel/loss_scaler.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/torch/mixed_precision.h"

namespace braid::train {

struct PrecisionPlan {
  torch::Precision precision = torch::Precision::kFp32;
  compress::CodecId wire = compress::CodecId::kNone;  // the gradients' (and ZeRO's parameters') codec
  std::optional<parallel::DynamicLossScaler> scaler;  // fp16 only

  // DDP's allreduce policy: the wire codec on every tensor, or --compress's policy for fp32.
  compress::CompressionPolicy ddp_policy(const TrainConfig& config) const;
};

// REQUIRES: validate() accepted the config.
PrecisionPlan plan_precision(const TrainConfig& config);

// --inject-overflow: for one backward, the first parameter's gradient gets +inf in its first
// element (on the rank that holds the scope), before autograd accumulates it.
class InjectedOverflow {
 public:
  InjectedOverflow(const std::vector<::torch::Tensor>& params, bool active);
  ~InjectedOverflow();
  InjectedOverflow(const InjectedOverflow&) = delete;
  InjectedOverflow& operator=(const InjectedOverflow&) = delete;

 private:
  ::torch::Tensor param_;
  unsigned hook_ = 0;
};

}  // namespace braid::train
