#include "braid/torch/zero_optimizer_state.h"

#include <fmt/format.h>

#include <memory>
#include <type_traits>
#include <typeinfo>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

// How LibTorch keys optimizer().state(): the parameter's TensorImpl, as a string in 1.13 (later
// versions key by the pointer itself). A template, so that only the matching branch compiles.
template <typename Key>
Key key_of(c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    return c10::guts::to_string(impl);
  } else {
    return static_cast<Key>(impl);
  }
}

auto state_key(const ::torch::Tensor& param) {
  using Map = std::remove_reference_t<decltype(std::declval<::torch::optim::Optimizer&>().state())>;
  return key_of<typename Map::key_type>(param.unsafeGetTensorImpl());
}

bool uses_amsgrad(::torch::optim::Optimizer& optimizer) {
  if (auto* adam = dynamic_cast<::torch::optim::AdamOptions*>(&optimizer.defaults())) return adam->amsgrad();
  if (auto* adamw = dynamic_cast<::torch::optim::AdamWOptions*>(&optimizer.defaults())) return adamw->amsgrad();
  return false;
}

// Adam's and AdamW's ParamState classes have the same fields: one reader and writer for both.
template <typename ParamState>
ShardState adam_state(const ParamState& s, bool amsgrad) {
  ShardState state{.present = true, .step = s.step(), .tensors = {s.exp_avg(), s.exp_avg_sq()}};
  if (amsgrad) state.tensors.push_back(s.max_exp_avg_sq());
  return state;
}

template <typename ParamState>
std::unique_ptr<ParamState> make_adam_state(const ShardState& state, bool amsgrad) {
  auto s = std::make_unique<ParamState>();
  s->step(state.step);
  s->exp_avg(state.tensors.at(0).clone());
  s->exp_avg_sq(state.tensors.at(1).clone());
  if (amsgrad) s->max_exp_avg_sq(state.tensors.at(2).clone());
  return s;
}

}  // namespace

std::string optimizer_kind(::torch::optim::Optimizer& optimizer) {
  std::string suffix = uses_amsgrad(optimizer) ? "-amsgrad" : "";
  if (dynamic_cast<::torch::optim::SGD*>(&optimizer)) return "sgd";
  if (dynamic_cast<::torch::optim::Adam*>(&optimizer)) return "adam" + suffix;
  if (dynamic_cast<::torch::optim::AdamW*>(&optimizer)) return "adamw" + suffix;
  throw InvalidArgument({.op = "zero checkpoint"},
                        fmt::format("the inner optimizer is a {}: sharded checkpoints know the state of SGD, Adam and "
                                    "AdamW only",
                                    typeid(optimizer).name()));
}

std::vector<std::string> state_tensor_names(const std::string& kind) {
  if (kind == "sgd") return {"momentum_buffer"};
  std::vector<std::string> names = {"exp_avg", "exp_avg_sq"};
  if (kind.ends_with("-amsgrad")) names.push_back("max_exp_avg_sq");
  return names;
}

ShardState shard_state(::torch::optim::Optimizer& optimizer, const std::string& kind, const ::torch::Tensor& param) {
  auto& states = optimizer.state();
  auto it = states.find(state_key(param));
  if (it == states.end()) return {};
  bool amsgrad = kind.ends_with("-amsgrad");
  if (kind == "sgd") {
    return {.present = true, .tensors = {static_cast<::torch::optim::SGDParamState&>(*it->second).momentum_buffer()}};
  }
  if (kind.starts_with("adamw")) return adam_state(static_cast<::torch::optim::AdamWParamState&>(*it->second), amsgrad);
  return adam_state(static_cast<::torch::optim::AdamParamState&>(*it->second), amsgrad);
}

void set_shard_state(::torch::optim::Optimizer& optimizer, const std::string& kind, const ::torch::Tensor& param,
                     const ShardState& state) {
  auto& states = optimizer.state();
  auto key = state_key(param);
  states.erase(key);
  if (!state.present) return;
  bool amsgrad = kind.ends_with("-amsgrad");
  if (kind == "sgd") {
    auto s = std::make_unique<::torch::optim::SGDParamState>();
    s->momentum_buffer(state.tensors.at(0).clone());
    states[key] = std::move(s);
  } else if (kind.starts_with("adamw")) {
    states[key] = make_adam_state<::torch::optim::AdamWParamState>(state, amsgrad);
  } else {
    states[key] = make_adam_state<::torch::optim::AdamParamState>(state, amsgrad);
  }
}

}  // namespace braid::torch
