// What the pipeline runtime (pipeline_runtime.h) runs: one rank's part of the model, behind an
// interface that knows nothing about communication or schedules. Tensors are plain float32
// buffers with an explicit shape, so an implementation can wrap anything: the plain-C++ MLP of
// tests/pipeline, or (in torch/) pieces of a torch::nn::Sequential, where forward keeps the
// autograd graph of micro-batch mb, backward_input calls torch::autograd::grad on the chunk's
// input (retaining the graph) and backward_weight the one on its parameters.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace braid::parallel {

using TensorShape = std::vector<std::int64_t>;

// A dense, row-major float32 tensor. REQUIRES: data.size() == element_count(shape).
struct StageTensor {
  TensorShape shape;
  std::vector<float> data;
};

// Product of the dimensions (1 for a scalar shape {}); InvalidArgument for a negative one.
std::int64_t element_count(std::span<const std::int64_t> shape);
// "[4, 16]"
std::string shape_string(std::span<const std::int64_t> shape);

// A stage's model chunks. The runtime calls every method from the thread that calls
// PipelineRuntime::run_step, in the order of this stage's schedule; micro-batches of one chunk
// may be in flight together (F of mb 3 before I/W of mb 1), so implementations keep what
// backward needs per (mb, chunk).
class PipelineStage {
 public:
  virtual ~PipelineStage() = default;

  // The per-micro-batch shapes chunk `chunk` consumes and produces. Constant for the
  // runtime's lifetime: receives are posted (and their buffers sized) before data arrives,
  // and the runtime compares them with the neighbouring stages' once, at construction.
  virtual TensorShape input_shape(int chunk) const = 0;
  virtual TensorShape output_shape(int chunk) const = 0;

  // Forward of micro-batch mb through chunk `chunk`. `input` is the previous virtual stage's
  // output; on the first virtual stage (stage 0, chunk 0) it is empty and the stage supplies
  // its own micro-batch. Returns the chunk's output, of output_shape(chunk); on the last
  // virtual stage the return value is not sent anywhere (the loss, or empty).
  virtual StageTensor forward(int mb, int chunk, const StageTensor& input) = 0;

  // The gradient with respect to the chunk's input, given the one with respect to its output
  // (empty on the last virtual stage, which starts from its own loss). Of input_shape(chunk);
  // on the first virtual stage it is not sent (may be empty).
  virtual StageTensor backward_input(int mb, int chunk, const StageTensor& grad_output) = 0;

  // Accumulates the weight gradients of micro-batch mb in chunk `chunk` (after its
  // backward_input), and may free what was kept for mb.
  virtual void backward_weight(int mb, int chunk) = 0;

  // A full backward (schedules without the I/W split). The default runs backward_input then
  // backward_weight; an implementation that can do both in one pass overrides it.
  virtual StageTensor backward(int mb, int chunk, const StageTensor& grad_output) {
    StageTensor grad_input = backward_input(mb, chunk, grad_output);
    backward_weight(mb, chunk);
    return grad_input;
  }
};

}  // namespace braid::parallel
