// braid::torch::SequentialStage: a pipeline stage (parallel/pipeline_stage.h) made of pieces of
// a torch::nn::Sequential, so that LibTorch models train under braid's pipeline schedules
// (parallel/pipeline_runtime.h).
//
//   torch::nn::Sequential model = ...;           // the whole model, built the same on every rank
//   auto partition = braid::parallel::balanced_layer_partition(parameter_counts, p, v);
//   braid::torch::SequentialStage stage(model, {.stage = pipe.rank(), .partition = partition,
//                                               .example_input = x0, .input = ..., .loss = ...});
//   braid::parallel::PipelineRuntime runtime(pipe, schedule, stage);
//   runtime.run_step();                          // gradients of this stage's layers accumulate
//
// Activations cross stages as float32 tensors; their shapes come from one no-grad pass of
// `example_input` (one micro-batch) through the whole model at construction, so every rank
// knows every boundary's shape before any data moves (the runtime compares neighbours).
//
// Mixed precision (`precision`, torch/mixed_precision.h): with bf16 every chunk's forward and
// the loss run under CPU autocast (the backward follows the graph's dtypes, outside it). A
// boundary tensor autocast left in bf16 is widened to fp32 for the trip, which is exact, and
// the receiving stage's autocast ops narrow it again to the same bf16 values; its gradient
// comes back fp32. In the GPT the boundaries are the residual stream, which autocast keeps fp32
// (fp32 parameters and residual adds promote), so sending 16 bits there would round what the
// single-process model keeps exact: docs/pipeline.md "Mixed precision" has the measurement.
//
// Backward. forward() keeps, per (micro-batch, chunk), the chunk's input (a leaf requiring grad,
// except on the first virtual stage) and its output (the scalar loss on the last). backward()
// runs autograd once, accumulating parameter gradients into .grad and returning the input's
// gradient. For zero-bubble schedules, backward_input() differentiates only with respect to the
// input (keeping the graph) and backward_weight() then only with respect to the parameters,
// adding into .grad: autograd has no cheaper split, so the pair costs more than one backward —
// correct, but ZB-H1's time advantage needs a model with a real input/weight split. The
// tensor-parallel mappings' collectives run once, in the input pass (SplitBackwardScope).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "braid/parallel/layer_partition.h"
#include "braid/parallel/pipeline_stage.h"
#include "braid/torch/mixed_precision.h"

namespace braid::torch {

struct SequentialStageOptions {
  int stage = 0;                        // this rank's stage in the pipeline
  parallel::LayerPartition partition;   // which layers each virtual stage holds
  ::torch::Tensor example_input;        // one micro-batch's model input (shapes only)
  // The first virtual stage's input for micro-batch mb of the current step.
  std::function<::torch::Tensor(int mb)> input;
  // The last virtual stage's loss for micro-batch mb given the model's output (a scalar that
  // already carries the 1/m of averaging over micro-batches).
  std::function<::torch::Tensor(int mb, const ::torch::Tensor& output)> loss;
  Precision precision = Precision::kFp32;  // bf16: forward and loss under autocast (see above)
};

class SequentialStage : public parallel::PipelineStage {
 public:
  // Throws InvalidArgument when the partition does not cover the model's layers or names a
  // stage outside it.
  SequentialStage(::torch::nn::Sequential model, SequentialStageOptions options);

  parallel::TensorShape input_shape(int chunk) const override;
  parallel::TensorShape output_shape(int chunk) const override;
  parallel::StageTensor forward(int mb, int chunk, const parallel::StageTensor& input) override;
  parallel::StageTensor backward_input(int mb, int chunk, const parallel::StageTensor& grad_output) override;
  void backward_weight(int mb, int chunk) override;
  parallel::StageTensor backward(int mb, int chunk, const parallel::StageTensor& grad_output) override;

  // What runs chunk `chunk`'s layers on x inside forward() (under its autocast); by default the
  // chunk's Sequential. A stage whose chunks hold several ZeRO-3 units installs one that gathers
  // them one by one (tools/braid_train/mesh_fully_sharded.h).
  using ChunkRunner = std::function<::torch::Tensor(int chunk, const ::torch::Tensor& x)>;
  void set_chunk_runner(ChunkRunner runner) { runner_ = std::move(runner); }

  // This stage's parameters (all its chunks), in model order, and the modules holding them.
  std::vector<::torch::Tensor> parameters() const;
  const std::vector<int>& layers() const { return layers_; }
  // Sum of the losses the last virtual stage computed since the last call (0 elsewhere).
  double take_loss_sum();

 private:
  struct Saved {
    ::torch::Tensor input;   // leaf requiring grad (undefined on the first virtual stage)
    ::torch::Tensor output;  // the chunk's output, or the loss on the last virtual stage
    ::torch::Tensor grad_output;  // kept between backward_input and backward_weight
  };

  int virtual_stage(int chunk) const;
  bool is_first(int chunk) const { return virtual_stage(chunk) == 0; }
  bool is_last(int chunk) const;
  std::vector<::torch::Tensor> chunk_parameters(int chunk) const;
  ::torch::Tensor seed_gradient(const Saved& saved, const parallel::StageTensor& grad_output) const;

  ::torch::nn::Sequential model_;
  SequentialStageOptions options_;
  std::vector<::torch::nn::Sequential> chunks_;      // this stage's pieces, by chunk
  std::vector<parallel::TensorShape> boundaries_;    // shape after layer i's piece ends, per virtual stage
  parallel::TensorShape model_input_shape_;
  std::vector<int> layers_;                          // model layer indices this stage holds
  std::map<std::pair<int, int>, Saved> saved_;       // (mb, chunk)
  double loss_sum_ = 0;
  ChunkRunner runner_;
};

}  // namespace braid::torch
