// The inner optimizer's state of one ZeRO shard (zero_optimizer.h) as plain tensors, which is
// what a sharded checkpoint (zero_checkpoint.h) saves and re-cuts: every state tensor of an
// elementwise optimizer has the shard's length and element i belongs to shard element i, so
// cutting a bucket at other shard boundaries cuts its state at the same ones.
//
// Known optimizers and their state per parameter (LibTorch 1.13's ParamState classes):
//   sgd                        momentum_buffer (none at all with momentum 0)
//   adam, adamw                exp_avg, exp_avg_sq, step
//   adam-amsgrad, adamw-amsgrad  + max_exp_avg_sq
// Any other optimizer is refused: the checkpoint could not know what its state means.
//
// LibTorch creates a parameter's state lazily at its first step, so "no state" is a state too
// (a checkpoint written before any step); it is carried as `present = false`.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid::torch {

// The kind above. Throws InvalidArgument naming what it got for another optimizer.
std::string optimizer_kind(::torch::optim::Optimizer& optimizer);

// The names of kind's per-element state tensors, in the order ShardState::tensors holds them.
std::vector<std::string> state_tensor_names(const std::string& kind);

struct ShardState {
  bool present = false;                  // torch has state for the parameter
  std::int64_t step = 0;                 // Adam's and AdamW's step count (bias correction); 0 for SGD
  std::vector<::torch::Tensor> tensors;  // per state_tensor_names(kind), each of the parameter's shape
};

// `param`'s state in `optimizer` (the tensors are the optimizer's own, not copies).
ShardState shard_state(::torch::optim::Optimizer& optimizer, const std::string& kind, const ::torch::Tensor& param);

// Replaces `param`'s state by `state` (created as torch would at a step, so the next step goes
// on from it exactly); `present = false` removes it.
void set_shard_state(::torch::optim::Optimizer& optimizer, const std::string& kind, const ::torch::Tensor& param,
                     const ShardState& state);

}  // namespace braid::torch
