#include "braid/torch/mixed_precision.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/parallel/loss_scaler.h"

namespace braid::torch {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;
  throw InvalidArgument({.op = "precision"}, fmt::format("'{}': expected fp32, bf16 or fp16", name));
}

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "?";
}

bool unscale_gradients(const std::vector<::torch::Tensor>& gradients, double scale, Communicator& group) {
  ::torch::NoGradGuard no_grad;
  bool overflow = false;
  for (const ::torch::Tensor& g : gradients) {
    if (!g.defined()) continue;
    ::torch::Tensor grad = g;  // a handle on the same tensor: mul_ writes through
    grad.mul_(1.0 / scale);
    overflow = overflow || !parallel::all_finite({grad.data_ptr<float>(), static_cast<std::size_t>(grad.numel())});
  }
  return parallel::agree_on_overflow(group, overflow);
}

std::vector<::torch::Tensor> gradients_of(const std::vector<::torch::Tensor>& params) {
  std::vector<::torch::Tensor> gradients;
  for (const ::torch::Tensor& p : params) gradients.push_back(p.grad());
  return gradients;
}

AutocastScope::AutocastScope(Precision precision) {
  if (precision != Precision::kBf16) return;
  active_ = true;
  was_enabled_ = at::autocast::is_cpu_enabled();
  was_dtype_ = static_cast<int>(at::autocast::get_autocast_cpu_dtype());
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_cpu_enabled(was_enabled_);
  at::autocast::set_autocast_cpu_dtype(static_cast<at::ScalarType>(was_dtype_));
}

}  // namespace braid::torch
