// Mixed precision for LibTorch training on CPUs: what braid-train's --precision selects.
//
//   bf16: the forward runs under LibTorch's CPU autocast in bfloat16 (torch.cpu.amp.autocast):
//         matmuls, convolutions and the like compute in bf16 from the fp32 parameters (each op
//         casts its fp32 weight once per forward), reductions that need range (softmax, losses,
//         norms) stay fp32, and the backward follows the same dtypes, so every parameter's
//         gradient arrives in fp32. The fp32 parameters are the master weights: with ZeRO they
//         are the sharded flat parameters the inner optimizer steps (zero_optimizer.h). bf16
//         has fp32's exponent range, so no loss scaling is needed. On CPUs with AMX or
//         AVX512-BF16 (oneDNN) bf16 matmuls are several times faster than fp32 (docs/zero.md
//         "Mixed precision" measures it).
//   fp16: the gradients travel in fp16 (GradSync's fp16 codec) under a dynamic loss scale
//         (parallel/loss_scaler.h): fp16's range (6e-8 .. 65504) is what loss scaling exists
//         for. The compute stays fp32 here: LibTorch 1.13's CPU kernels have no fp16 matmul
//         ("addmm_impl_cpu_" not implemented for 'Half'), and its CPU autocast takes bf16 only.
//   fp32: everything fp32 (the default).
//
// AutocastScope is the RAII switch around a forward: it enables CPU autocast for bf16 (and
// does nothing otherwise), restores the thread's previous autocast state on exit and clears
// autocast's weight-cast cache when the outermost scope ends (the casts are per forward).
// Thread-local, like autocast itself: open it on the thread that runs the forward.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "braid/comm/communicator.h"

namespace braid::torch {

enum class Precision { kFp32, kBf16, kFp16 };

// "fp32", "bf16", "fp16"; InvalidArgument naming the value otherwise.
Precision parse_precision(const std::string& name);
std::string to_string(Precision precision);

// A loss-scaled step's check: divides every defined tensor of `gradients` (dense, contiguous
// fp32: DDP's averaged .grad, or ZeRO's shards) by `scale` in place and returns whether any rank
// of `group` found a non-finite element, the agreed overflow decision (one allreduce).
// Collective over `group`.
bool unscale_gradients(const std::vector<::torch::Tensor>& gradients, double scale, Communicator& group);
// The gradients of `params` (undefined ones included), for the call above.
std::vector<::torch::Tensor> gradients_of(const std::vector<::torch::Tensor>& params);

class AutocastScope {
 public:
  explicit AutocastScope(Precision precision);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool was_enabled_ = false;
  int was_dtype_ = 0;  // c10::ScalarType, kept out of this header
};

}  // namespace braid::torch
