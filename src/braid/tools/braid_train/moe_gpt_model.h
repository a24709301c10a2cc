// --model moe-gpt: the GPT of gpt_model.cc with a Mixture-of-Experts MLP in every other block
// (blocks 1, 3, 5, ...: GShard's and Switch's "every other FFN layer"), each a
// braid::torch::MoeLayer of 4 x width experts over the EP group.
//
// Parameters are drawn from torch's generator in the order of the --ep 1 model (a MoE layer
// draws every expert, keeping its own: torch/moe_experts.h), so --ep N starts with exactly the
// --ep 1 model's values, spread over the EP group.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/models.h"
#include "braid/torch/moe_layer.h"

namespace braid::train {

// Collective over ep_group (each MoE layer's construction). No dropout (spec.dropout must be 0).
std::shared_ptr<TrainModel> make_moe_gpt(const ModelSpec& spec, Communicator& ep_group,
                                         const torch::MoeLayerOptions& moe);

// The MoE layers of a model (or of any module holding some of its layers), in order.
std::vector<std::shared_ptr<torch::MoeLayerImpl>> moe_layers_of(::torch::nn::Module& model);
// The sum of their auxiliary losses from the last forward.
::torch::Tensor moe_auxiliary_loss(const std::vector<std::shared_ptr<torch::MoeLayerImpl>>& layers);

// Collective over ep_group: every parameter of the model as the --ep 1 model holds them, in its
// order, flattened into one float32 tensor (each MoE layer's experts gathered from their ranks).
// What --export writes and the digest is computed over for moe-gpt.
::torch::Tensor whole_moe_gpt_parameters(TrainModel& model, Communicator& ep_group);

}  // namespace braid::train
