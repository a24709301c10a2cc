// braid-train --model moe-gpt --pp N: the moe-gpt cut into pipeline stages, each stage's MoE
// layers exchanging tokens over the EP group of that stage (base/moe_mesh_layout.h draws the
// {edp, ep, pp, tp} mesh), under braid's pipeline schedules (parallel/pipeline_runtime.h).
//
//   MoeGptPipeline pipe(mesh.group("pp"), model.layers(), {.schedule = {kind, pp, m}, .stage = s, ...});
//   pipe.run_step();            // m micro-batches; this stage's gradients accumulate in .grad
//   double loss = pipe.take_loss_sum();
//
// The auxiliary losses. Each micro-batch's loss is task/m + (load-balancing + z-loss of every
// MoE layer)/m, as one process computing the micro-batches in a row would add them. Only the
// last stage has the task loss; every other stage's MoE layers compute theirs in its forward.
// So every chunk's output carries the auxiliary losses of the MoE layers inside it
// (torch/attached_loss.h), and the micro-batch's backward through that chunk differentiates
// them: on every schedule, at the moment the chunk's backward runs, with no message for them.
//
// Every rank of an EP group is the same stage of another replica and runs the same schedule,
// so its MoE layers' all-to-alls (forward and backward) come in the same order on each rank.
// Zero-bubble schedules (backward split into input and weight passes) are refused by the
// configuration: a MoE layer's backward is an exchange and runs once per forward.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/parallel/layer_partition.h"
#include "braid/parallel/pipeline_runtime.h"
#include "braid/parallel/pipeline_schedule.h"
#include "braid/torch/moe_layer.h"
#include "braid/torch/sequential_stage.h"

namespace braid::train {

struct MoeGptPipelineOptions {
  parallel::ScheduleSpec schedule;  // kind, stages (= the pipeline group's size), micro-batches, chunks
  int stage = 0;                    // this rank's stage
  ::torch::Tensor example_input;    // one micro-batch's model input (shapes only)
  std::function<::torch::Tensor(int mb)> input;  // the first stage's micro-batch mb
  // The last stage's task loss of micro-batch mb (already divided by the micro-batch count).
  std::function<::torch::Tensor(int mb, const ::torch::Tensor& output)> loss;
};

class MoeGptPipeline {
 public:
  // Collective over `pipeline` (the runtime's shape exchange). `layers` is the whole model's
  // Sequential, built alike on every rank; this rank trains the layers of its stage.
  MoeGptPipeline(Communicator& pipeline, ::torch::nn::Sequential layers, MoeGptPipelineOptions options);

  // One optimizer step's m micro-batches, forward and backward.
  parallel::StepReport run_step() { return runtime_->run_step(); }
  // This stage's layers as one module (what the data-parallel groups average) and their parameters.
  const std::shared_ptr<::torch::nn::Module>& module() const { return module_; }
  std::vector<::torch::Tensor> parameters() const { return stage_->parameters(); }
  // This stage's part of the loss since the last call: the task losses (last stage) plus the
  // auxiliary losses of its MoE layers, each already divided by m.
  double take_loss_sum();
  // Collective over the pipeline: every stage's trained layers to every rank of the pipeline.
  void share_layers();

 private:
  ::torch::Tensor run_chunk(int chunk, const ::torch::Tensor& x);

  Communicator& pipeline_;
  ::torch::nn::Sequential layers_;
  MoeGptPipelineOptions options_;
  parallel::LayerPartition partition_;
  std::vector<std::vector<std::shared_ptr<torch::MoeLayerImpl>>> moe_by_chunk_;  // this stage's, per chunk
  std::unique_ptr<torch::SequentialStage> stage_;
  std::shared_ptr<::torch::nn::Module> module_;
  std::unique_ptr<parallel::PipelineRuntime> runtime_;
  double auxiliary_sum_ = 0;
};

}  // namespace braid::train
