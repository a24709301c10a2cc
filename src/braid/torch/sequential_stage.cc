#include "braid/torch/sequential_stage.h"

#include <fmt/format.h>

#include <cstring>

#include "braid/base/error.h"
#include "braid/torch/tensor_parallel_mappings.h"

namespace braid::torch {
namespace {

// fp32 on purpose: exact for a bf16 boundary too (sequential_stage.h, "Mixed precision").
parallel::StageTensor to_stage_tensor(const ::torch::Tensor& t) {
  ::torch::Tensor c = t.detach().to(::torch::kFloat32).contiguous();
  parallel::StageTensor out{.shape = c.sizes().vec(), .data = std::vector<float>(static_cast<std::size_t>(c.numel()))};
  if (c.numel() > 0) std::memcpy(out.data.data(), c.data_ptr<float>(), out.data.size() * sizeof(float));
  return out;
}

::torch::Tensor to_torch(const parallel::StageTensor& t) {
  // from_blob does not own the memory: clone so the tensor outlives the runtime's buffer.
  return ::torch::from_blob(const_cast<float*>(t.data.data()), t.shape, ::torch::kFloat32).clone();
}

void accumulate(const std::vector<::torch::Tensor>& params, const std::vector<::torch::Tensor>& grads) {
  ::torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!grads[i].defined()) continue;
    ::torch::Tensor p = params[i];
    // 16-bit parameters (ZeRO-3's bf16 storage) keep fp32 gradients, as their accumulator hooks
    // make them (torch/fully_sharded.h): the micro-batches then accumulate in fp32.
    ::torch::Tensor g = grads[i].is_floating_point() && grads[i].element_size() < 4 ? grads[i].to(::torch::kFloat32) : grads[i];
    if (p.grad().defined()) {
      p.mutable_grad().add_(g);
    } else {
      p.mutable_grad() = g.is_same(grads[i]) ? g.clone() : g;
    }
  }
}

}  // namespace

SequentialStage::SequentialStage(::torch::nn::Sequential model, SequentialStageOptions options)
    : model_(std::move(model)), options_(std::move(options)) {
  const parallel::LayerPartition& part = options_.partition;
  ErrorContext context{.rank = options_.stage, .op = "SequentialStage"};
  int layers = static_cast<int>(model_->size());
  if (part.pieces.empty() || part.pieces.front().begin != 0 || part.pieces.back().end != layers) {
    throw InvalidArgument(context, fmt::format("the partition does not cover the model's {} layers", layers));
  }
  if (options_.stage < 0 || options_.stage >= part.stages) {
    throw InvalidArgument(context, fmt::format("stage {} outside the partition's {} stages", options_.stage, part.stages));
  }
  // Every boundary's shape, from one no-grad pass of the example micro-batch.
  ::torch::NoGradGuard no_grad;
  ::torch::Tensor x = options_.example_input;
  model_input_shape_ = x.sizes().vec();
  for (const parallel::LayerRange& piece : part.pieces) {
    for (auto it = model_->begin() + piece.begin; it != model_->begin() + piece.end; ++it) x = it->forward(x);
    boundaries_.push_back(x.sizes().vec());
  }
  for (int chunk = 0; chunk < part.chunks; ++chunk) {
    const parallel::LayerRange& range = part.range(options_.stage, chunk);
    ::torch::nn::Sequential piece;
    auto it = model_->begin() + range.begin;
    for (int i = range.begin; i < range.end; ++i, ++it) {
      piece->push_back(std::to_string(i), *it);
      layers_.push_back(i);
    }
    chunks_.push_back(piece);
  }
}

int SequentialStage::virtual_stage(int chunk) const { return chunk * options_.partition.stages + options_.stage; }
bool SequentialStage::is_last(int chunk) const {
  return virtual_stage(chunk) == static_cast<int>(options_.partition.pieces.size()) - 1;
}

parallel::TensorShape SequentialStage::input_shape(int chunk) const {
  int vs = virtual_stage(chunk);
  return vs == 0 ? model_input_shape_ : boundaries_[static_cast<std::size_t>(vs - 1)];
}

parallel::TensorShape SequentialStage::output_shape(int chunk) const {
  return boundaries_[static_cast<std::size_t>(virtual_stage(chunk))];
}

parallel::StageTensor SequentialStage::forward(int mb, int chunk, const parallel::StageTensor& input) {
  Saved saved;
  ::torch::Tensor x;
  if (is_first(chunk)) {
    x = options_.input(mb);
  } else {
    saved.input = to_torch(input).requires_grad_(true);
    x = saved.input;
  }
  AutocastScope autocast(options_.precision);
  ::torch::Tensor out = runner_ ? runner_(chunk, x) : chunks_[static_cast<std::size_t>(chunk)]->forward(x);
  if (is_last(chunk)) {
    saved.output = options_.loss(mb, out);
    loss_sum_ += saved.output.item<double>();
    saved_[{mb, chunk}] = std::move(saved);
    return {};
  }
  parallel::StageTensor result = to_stage_tensor(out);
  saved.output = out;
  saved_[{mb, chunk}] = std::move(saved);
  return result;
}

::torch::Tensor SequentialStage::seed_gradient(const Saved& saved, const parallel::StageTensor& grad_output) const {
  if (grad_output.data.empty()) return ::torch::ones_like(saved.output);  // the loss: d loss / d loss
  return to_torch(grad_output);
}

parallel::StageTensor SequentialStage::backward(int mb, int chunk, const parallel::StageTensor& grad_output) {
  auto node = saved_.extract({mb, chunk});
  Saved& saved = node.mapped();
  // A first piece without parameters (a Flatten) has nothing to differentiate.
  if (!saved.output.requires_grad()) return {};
  // One pass: parameter gradients accumulate into .grad, the input's lands in input.grad().
  saved.output.backward(seed_gradient(saved, grad_output));
  if (!saved.input.defined()) return {};
  return to_stage_tensor(saved.input.grad());
}

parallel::StageTensor SequentialStage::backward_input(int mb, int chunk, const parallel::StageTensor& grad_output) {
  Saved& saved = saved_.at({mb, chunk});
  saved.grad_output = seed_gradient(saved, grad_output);
  if (!saved.input.defined()) return {};
  SplitBackwardScope input_pass(SplitBackwardScope::Pass::kInput);  // TP mappings keep their results
  std::vector<::torch::Tensor> grads = ::torch::autograd::grad({saved.output}, {saved.input}, {saved.grad_output},
                                                               /*retain_graph=*/true);
  return to_stage_tensor(grads[0]);
}

void SequentialStage::backward_weight(int mb, int chunk) {
  auto node = saved_.extract({mb, chunk});
  Saved& saved = node.mapped();
  std::vector<::torch::Tensor> params = chunk_parameters(chunk);
  if (params.empty()) return;
  SplitBackwardScope weight_pass(SplitBackwardScope::Pass::kWeight);  // ... and reuse them here
  std::vector<::torch::Tensor> grads = ::torch::autograd::grad({saved.output}, params, {saved.grad_output},
                                                               /*retain_graph=*/false, /*create_graph=*/false,
                                                               /*allow_unused=*/true);
  accumulate(params, grads);
}

std::vector<::torch::Tensor> SequentialStage::chunk_parameters(int chunk) const {
  return chunks_[static_cast<std::size_t>(chunk)]->parameters();
}

std::vector<::torch::Tensor> SequentialStage::parameters() const {
  std::vector<::torch::Tensor> all;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    for (const ::torch::Tensor& p : chunk_parameters(static_cast<int>(c))) all.push_back(p);
  }
  return all;
}

double SequentialStage::take_loss_sum() { return std::exchange(loss_sum_, 0.0); }

}  // namespace braid::torch
