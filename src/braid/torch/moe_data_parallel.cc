#include "braid/torch/moe_data_parallel.h"

#include <fmt/format.h>

#include <string>

#include "braid/base/error.h"
#include "braid/torch/moe_layer.h"

namespace braid::torch {
namespace {

// A module that registers some of another module's parameters (the same tensors) under
// their names, dots made underscores (a module parameter name may not hold a dot).
std::shared_ptr<::torch::nn::Module> holder_of(const ::torch::nn::Module& model, bool experts,
                                               std::vector<::torch::Tensor>* taken) {
  auto holder = std::make_shared<::torch::nn::Module>();
  for (const auto& p : model.named_parameters()) {
    if (MoeLayerImpl::is_expert_parameter(p.key()) != experts) continue;
    std::string name = p.key();
    for (char& c : name) c = c == '.' ? '_' : c;
    holder->register_parameter(name, p.value(), p.value().requires_grad());
    if (taken != nullptr) taken->push_back(p.value());
  }
  return holder;
}

}  // namespace

MoeGroups split_moe_groups(Communicator& world, int ep) {
  if (ep < 1 || world.size() % ep != 0) {
    throw InvalidArgument({.rank = world.rank(), .op = "moe groups"},
                          fmt::format("the EP size ({}) must be >= 1 and divide the world size ({})", ep, world.size()));
  }
  std::optional<Communicator> ep_group = world.split(world.rank() / ep, world.rank());
  std::optional<Communicator> expert_dp = world.split(world.rank() % ep, world.rank());
  return {std::move(*ep_group), std::move(*expert_dp)};
}

MoeDataParallel::MoeDataParallel(Communicator& world, Communicator& expert_dp,
                                 const std::shared_ptr<::torch::nn::Module>& model, DdpOptions options)
    : expert_scale_(static_cast<double>(expert_dp.size()) / world.size()) {
  dense_ = std::make_unique<DistributedDataParallel>(world, holder_of(*model, false, nullptr), options);
  auto expert_holder = holder_of(*model, true, &expert_params_);
  if (!expert_params_.empty()) experts_ = std::make_unique<DistributedDataParallel>(expert_dp, expert_holder, options);
}

void MoeDataParallel::zero_grad() {
  dense_->zero_grad();
  if (experts_) experts_->zero_grad();
}

GradSyncStats MoeDataParallel::synchronize() {
  GradSyncStats stats = dense_->synchronize();
  if (experts_) {
    experts_->synchronize();
    ::torch::NoGradGuard no_grad;
    for (::torch::Tensor& p : expert_params_) p.mutable_grad().mul_(expert_scale_);
  }
  return stats;
}

}  // namespace braid::torch
