#include "braid/torch/tensor_parallel_rng.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::torch {

TensorParallelRng::TensorParallelRng(std::uint64_t seed, int tp_rank, int pipeline_stage)
    : replicated_(at::make_generator<at::CPUGeneratorImpl>(seed + 100 * static_cast<std::uint64_t>(pipeline_stage))),
      tensor_parallel_(at::make_generator<at::CPUGeneratorImpl>(seed + 100 * static_cast<std::uint64_t>(pipeline_stage) +
                                                                2718 + static_cast<std::uint64_t>(tp_rank))) {}

::torch::Tensor TensorParallelRng::dropout(const ::torch::Tensor& x, double p, bool training, at::Generator& generator) {
  if (!training || p == 0) return x;
  ::torch::Tensor keep = ::torch::empty_like(x).bernoulli_(1 - p, generator);
  return x * keep / (1 - p);
}

::torch::Tensor TensorParallelRng::state() const {
  return ::torch::cat({replicated_.get_state(), tensor_parallel_.get_state()});
}

void TensorParallelRng::set_state(const ::torch::Tensor& state) {
  std::int64_t half = replicated_.get_state().numel();
  if (state.scalar_type() != ::torch::kUInt8 || state.dim() != 1 || state.numel() != 2 * half) {
    throw InvalidArgument({.op = "TensorParallelRng::set_state"},
                          fmt::format("a state of {} bytes, expected {} (two CPU generator states)", state.numel(), 2 * half));
  }
  replicated_.set_state(state.narrow(0, 0, half).clone());
  tensor_parallel_.set_state(state.narrow(0, half, half).clone());
}

}  // namespace braid::torch
