// A small multi-layer perceptron in plain C++ (linear + tanh layers, squared-error loss), with
// hand-written forward and backward, for testing the pipeline runtime without LibTorch: the
// same model trained by one process (reference_train) and by a pipeline of ranks (MlpStage
// behind PipelineRuntime) must end with the same gradients and parameters.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "braid/parallel/layer_partition.h"
#include "braid/parallel/pipeline_stage.h"

namespace braid::testing {

struct MlpConfig {
  int layers = 8;
  int input_width = 6;
  int hidden_width = 10;
  int output_width = 4;
  int rows = 3;  // samples per micro-batch
  int microbatches = 8;
  float learning_rate = 0.1f;
};

struct DenseLayer {
  int in = 0;
  int out = 0;
  std::vector<float> weight;  // out x in, row-major
  std::vector<float> bias;    // out
  std::vector<float> grad_weight;
  std::vector<float> grad_bias;
};

// The model, initialised deterministically (the same on every rank).
std::vector<DenseLayer> make_mlp(const MlpConfig& config);

// Deterministic data: micro-batch mb of training step `step` (rows x input_width) and its
// targets (rows x output_width).
std::vector<float> microbatch_input(const MlpConfig& config, int step, int mb);
std::vector<float> microbatch_target(const MlpConfig& config, int step, int mb);

// y = tanh(x W^T + b), x: rows x in.
std::vector<float> layer_forward(const DenseLayer& layer, const std::vector<float>& x, int rows);
// Given y (the layer's output) and dL/dy: dz = dL/dy * (1 - y^2) (returned through `dz`) and
// dL/dx = dz W (returned).
std::vector<float> layer_backward_input(const DenseLayer& layer, const std::vector<float>& y,
                                        const std::vector<float>& grad_y, int rows, std::vector<float>& dz);
// grad_weight += dz^T x, grad_bias += column sums of dz.
void layer_backward_weight(DenseLayer& layer, const std::vector<float>& x, const std::vector<float>& dz, int rows);
// dL/dy for L = sum over the step's samples of 0.5 |y - target|^2 / (rows * microbatches).
std::vector<float> loss_gradient(const MlpConfig& config, const std::vector<float>& y,
                                 const std::vector<float>& target);
// Plain SGD on layers [begin, end), then zeroes their gradients.
void sgd_step(std::vector<DenseLayer>& model, int begin, int end, float learning_rate);

// Single-process training: for each step, forward and backward of every micro-batch in order
// (gradients accumulated), then SGD. `last_gradients` receives the gradients of the last step
// (per layer: weight then bias), taken before its update.
void reference_train(const MlpConfig& config, std::vector<DenseLayer>& model, int steps,
                     std::vector<std::vector<float>>& last_gradients);

// This rank's chunks of the model as a PipelineStage: forward and backward through the layers
// of each chunk, keeping per (micro-batch, chunk) what backward needs. The first virtual stage
// reads microbatch_input, the last computes the loss gradient itself.
class MlpStage : public parallel::PipelineStage {
 public:
  // `model` is the whole model (this stage uses its layers only); partition says which.
  MlpStage(const MlpConfig& config, std::vector<DenseLayer>& model, parallel::LayerPartition partition, int stage);

  void set_step(int step) { step_ = step; }
  // For the shape-mismatch test: the width this stage claims chunk 0 consumes.
  void declare_wrong_input_width(int width) { wrong_input_width_ = width; }
  // For the wrong-output test: forward of micro-batch mb returns one column too few.
  void truncate_output_of(int mb) { truncated_mb_ = mb; }

  parallel::TensorShape input_shape(int chunk) const override;
  parallel::TensorShape output_shape(int chunk) const override;
  parallel::StageTensor forward(int mb, int chunk, const parallel::StageTensor& input) override;
  parallel::StageTensor backward_input(int mb, int chunk, const parallel::StageTensor& grad_output) override;
  void backward_weight(int mb, int chunk) override;

 private:
  struct Saved {
    std::vector<std::vector<float>> inputs;   // per layer of the chunk
    std::vector<std::vector<float>> outputs;  // per layer
    std::vector<std::vector<float>> dz;       // per layer, filled by backward_input
  };
  bool first_virtual(int chunk) const;
  bool last_virtual(int chunk) const;
  const parallel::LayerRange& layers_of(int chunk) const { return partition_.range(stage_, chunk); }

  MlpConfig config_;
  std::vector<DenseLayer>& model_;
  parallel::LayerPartition partition_;
  int stage_;
  int step_ = 0;
  int wrong_input_width_ = 0;
  int truncated_mb_ = -1;
  std::map<std::pair<int, int>, Saved> saved_;  // (mb, chunk)
};

}  // namespace braid::testing
