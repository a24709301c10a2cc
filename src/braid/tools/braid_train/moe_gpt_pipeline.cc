#include "braid/tools/braid_train/moe_gpt_pipeline.h"

#include <utility>

#include "braid/torch/attached_loss.h"
#include "braid/tools/braid_train/moe_gpt_model.h"
#include "braid/tools/braid_train/pipeline_pieces.h"

namespace braid::train {

MoeGptPipeline::MoeGptPipeline(Communicator& pipeline, ::torch::nn::Sequential layers, MoeGptPipelineOptions options)
    : pipeline_(pipeline), layers_(std::move(layers)), options_(std::move(options)) {
  const parallel::ScheduleSpec& spec = options_.schedule;
  partition_ = parallel::balanced_layer_partition(layer_weights(layers_), spec.stages, spec.chunks);
  for (int chunk = 0; chunk < spec.chunks; ++chunk) {
    std::vector<std::shared_ptr<torch::MoeLayerImpl>> moe;
    const parallel::LayerRange& piece = partition_.range(options_.stage, chunk);
    for (int i = piece.begin; i < piece.end; ++i) {
      for (auto& layer : moe_layers_of(*layers_[static_cast<std::size_t>(i)])) moe.push_back(layer);
      // a MoE layer is a submodule of its block; moe_layers_of skips the module it is given
      if (auto self = std::dynamic_pointer_cast<torch::MoeLayerImpl>(layers_[static_cast<std::size_t>(i)])) {
        moe.push_back(self);
      }
    }
    moe_by_chunk_.push_back(std::move(moe));
  }
  stage_ = std::make_unique<torch::SequentialStage>(
      layers_, torch::SequentialStageOptions{.stage = options_.stage,
                                             .partition = partition_,
                                             .example_input = options_.example_input,
                                             .input = options_.input,
                                             .loss = options_.loss});
  // The shape pass above routed one micro-batch through every MoE layer: not training.
  for (const auto& layer : moe_layers_of(*layers_)) layer->reset_stats();
  stage_->set_chunk_runner([this](int chunk, const ::torch::Tensor& x) { return run_chunk(chunk, x); });
  module_ = stage_module(layers_, stage_->layers());
  runtime_ = std::make_unique<parallel::PipelineRuntime>(pipeline_, parallel::make_schedule(spec), *stage_);
}

::torch::Tensor MoeGptPipeline::run_chunk(int chunk, const ::torch::Tensor& x) {
  const parallel::LayerRange& piece = partition_.range(options_.stage, chunk);
  ::torch::Tensor out = x;
  for (auto it = layers_->begin() + piece.begin; it != layers_->begin() + piece.end; ++it) out = it->forward(out);
  const auto& moe = moe_by_chunk_[static_cast<std::size_t>(chunk)];
  if (moe.empty()) return out;
  ::torch::Tensor auxiliary = moe_auxiliary_loss(moe);
  const double per_microbatch = 1.0 / options_.schedule.microbatches;
  auxiliary_sum_ += auxiliary.item<double>() * per_microbatch;
  return torch::attach_loss(out, auxiliary, per_microbatch);
}

double MoeGptPipeline::take_loss_sum() { return stage_->take_loss_sum() + std::exchange(auxiliary_sum_, 0.0); }

void MoeGptPipeline::share_layers() { share_stage_layers(pipeline_, layers_, partition_); }

}  // namespace braid::train
