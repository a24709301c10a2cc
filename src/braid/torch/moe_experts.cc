#include "braid/torch/moe_experts.h"

#include <string>

namespace braid::torch {

using ::torch::Tensor;

MoeExpertsImpl::MoeExpertsImpl(int experts, int first, int local, std::int64_t hidden, std::int64_t ffn)
    : first_(first) {
  for (int e = 0; e < experts; ++e) {
    ::torch::nn::Linear up(hidden, ffn), down(ffn, hidden);  // draws from the RNG, local or not
    if (e < first || e >= first + local) continue;
    std::string name = "expert" + std::to_string(e - first);
    up_.push_back(register_module(name + "_up", up));
    down_.push_back(register_module(name + "_down", down));
  }
}

Tensor MoeExpertsImpl::forward(const Tensor& rows, std::span<const std::int64_t> offsets) {
  std::vector<Tensor> outputs;
  outputs.reserve(up_.size());
  for (std::size_t i = 0; i < up_.size(); ++i) {
    Tensor mine = rows.narrow(0, offsets[i], offsets[i + 1] - offsets[i]);
    outputs.push_back(down_[i]->forward(::torch::gelu(up_[i]->forward(mine))));
  }
  if (outputs.empty()) return rows.new_zeros(rows.sizes());
  return ::torch::cat(outputs, 0);
}

}  // namespace braid::torch
