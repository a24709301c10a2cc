#include "braid/tools/braid_train/moe_gpt_model.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/tools/braid_train/gpt_layers.h"
#include "braid/tools/braid_train/moe_gpt_block.h"

namespace braid::train {
namespace nn = ::torch::nn;

std::shared_ptr<TrainModel> make_moe_gpt(const ModelSpec& spec, Communicator& ep_group,
                                         const torch::MoeLayerOptions& moe) {
  if (spec.dropout > 0) throw InvalidArgument({.op = "make_moe_gpt"}, "moe-gpt has no dropout");
  if (spec.heads < 1 || spec.width % spec.heads != 0) {
    throw InvalidArgument({.op = "make_moe_gpt"}, fmt::format("width {} does not split into {} heads", spec.width, spec.heads));
  }
  torch::MoeLayerOptions layer = moe;
  layer.hidden = spec.width;
  layer.ffn = 4 * spec.width;
  nn::Sequential layers;
  layers->push_back("embeddings", std::make_shared<gpt::Embeddings>(spec));
  for (std::int64_t i = 0; i < spec.layers; ++i) {
    std::string name = "block" + std::to_string(i);
    if (i % 2 == 1) {
      layers->push_back(name, std::make_shared<MoeBlock>(spec, ep_group, layer));
    } else {
      layers->push_back(name, std::make_shared<gpt::Block>(spec));
    }
  }
  layers->push_back("ln", nn::LayerNorm(nn::LayerNormOptions({spec.width})));
  layers->push_back("head", nn::Linear(spec.width, spec.vocab));
  return std::make_shared<TrainModel>(layers);
}

std::vector<std::shared_ptr<torch::MoeLayerImpl>> moe_layers_of(::torch::nn::Module& model) {
  std::vector<std::shared_ptr<torch::MoeLayerImpl>> layers;
  for (const std::shared_ptr<nn::Module>& m : model.modules(/*include_self=*/false)) {
    if (auto layer = std::dynamic_pointer_cast<torch::MoeLayerImpl>(m)) layers.push_back(layer);
  }
  return layers;
}

::torch::Tensor moe_auxiliary_loss(const std::vector<std::shared_ptr<torch::MoeLayerImpl>>& layers) {
  ::torch::Tensor total = ::torch::zeros({});
  for (const auto& layer : layers) total = total + layer->auxiliary_loss();
  return total;
}

::torch::Tensor whole_moe_gpt_parameters(TrainModel& model, Communicator& ep_group) {
  ::torch::NoGradGuard no_grad;
  std::vector<::torch::Tensor> pieces, experts;  // experts: the current run of one layer's
  auto flush_experts = [&] {
    if (experts.empty()) return;
    ::torch::Tensor mine = ::torch::cat(experts).contiguous();
    // Rank r of the EP group hosts the layer's experts [r E/ep, (r+1) E/ep): the ranks' blocks
    // in rank order are the --ep 1 model's expert parameters in its order.
    ::torch::Tensor all = ::torch::empty({mine.numel() * ep_group.size()}, mine.options());
    allgather(ep_group, mine.data_ptr(), all.data_ptr(), mine.numel(), DType::kF32);
    pieces.push_back(all);
    experts.clear();
  };
  for (const auto& p : model.named_parameters()) {
    if (torch::MoeLayerImpl::is_expert_parameter(p.key())) {
      experts.push_back(p.value().detach().reshape({-1}));
      continue;
    }
    flush_experts();
    pieces.push_back(p.value().detach().reshape({-1}));
  }
  flush_experts();
  return ::torch::cat(pieces);
}

}  // namespace braid::train
