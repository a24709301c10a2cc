#include "braid/tools/braid_train/pipeline_pieces.h"

#include <string>

#include "braid/collectives/collectives.h"
#include "braid/torch/tensor_dtype.h"

namespace braid::train {

std::vector<std::int64_t> layer_weights(::torch::nn::Sequential& layers) {
  std::vector<std::int64_t> weights;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    std::int64_t count = 1;
    for (const ::torch::Tensor& p : layers[i]->parameters()) count += p.numel();
    weights.push_back(count);
  }
  return weights;
}

std::shared_ptr<::torch::nn::Module> stage_module(::torch::nn::Sequential& layers, const std::vector<int>& owned) {
  auto holder = std::make_shared<::torch::nn::Module>("PipelineStage");
  for (int i : owned) holder->register_module("layer" + std::to_string(i), layers[static_cast<std::size_t>(i)]);
  return holder;
}

void share_stage_layers(Communicator& pipeline, ::torch::nn::Sequential& layers, const parallel::LayerPartition& partition,
                        bool sixteen_bit) {
  ::torch::NoGradGuard no_grad;
  for (std::size_t vs = 0; vs < partition.pieces.size(); ++vs) {
    int owner = static_cast<int>(vs) % partition.stages;
    for (int i = partition.pieces[vs].begin; i < partition.pieces[vs].end; ++i) {
      std::vector<::torch::Tensor> params = layers[static_cast<std::size_t>(i)]->parameters();
      std::vector<::torch::Tensor> tensors = sixteen_bit ? std::vector<::torch::Tensor>{} : params;
      for (const ::torch::Tensor& b : layers[static_cast<std::size_t>(i)]->buffers()) tensors.push_back(b);
      for (::torch::Tensor& t : tensors) {
        broadcast(pipeline, t.data_ptr(), t.numel(), torch::braid_dtype(t, "braid-train --pp"), owner);
      }
      if (!sixteen_bit) continue;
      for (::torch::Tensor& p : params) {
        ::torch::Tensor wire = p.to(::torch::kFloat32);
        broadcast(pipeline, wire.data_ptr(), wire.numel(), DType::kF32, owner);
        if (pipeline.rank() != owner) p.set_data(wire.to(::torch::kBFloat16));
      }
    }
  }
}

}  // namespace braid::train
