// moe-gpt's MoE block (moe_gpt_model.h): gpt::Block with its MLP replaced by a MoE layer
// (pre-norm, residual around each branch). Shared by the single-process model and its
// tensor-parallel twin (tensor_parallel_gpt.cc), which splits the attention over the TP group
// and keeps this very MoE layer (experts are not TP-split: docs/moe.md).
#pragma once

#include <torch/torch.h>

#include <memory>

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/gpt_layers.h"
#include "braid/torch/moe_layer.h"

namespace braid::train {

class MoeBlock : public ::torch::nn::Module {
 public:
  MoeBlock(const ModelSpec& spec, Communicator& ep_group, const torch::MoeLayerOptions& layer)
      : ln1(register_module("ln1", ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({spec.width})))),
        attention(register_module("attention", std::make_shared<gpt::CausalSelfAttention>(spec))),
        ln2(register_module("ln2", ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({spec.width})))),
        moe(register_module("moe", torch::MoeLayer(ep_group, layer))) {}

  ::torch::Tensor forward(::torch::Tensor x) {
    x = x + attention->forward(ln1->forward(x));
    return x + moe->forward(ln2->forward(x));
  }

  ::torch::nn::LayerNorm ln1{nullptr};
  std::shared_ptr<gpt::CausalSelfAttention> attention;
  ::torch::nn::LayerNorm ln2{nullptr};
  torch::MoeLayer moe{nullptr};
};

}  // namespace braid::train
