// braid-train's models: `mlp` and `cnn` classify Fashion-MNIST images, `gpt` is a small
// decoder-only transformer trained as a character-level language model. Each returns logits;
// the trainer applies the cross-entropy (mean over samples, or over tokens for gpt).
//
// Without --dropout none uses randomness in forward, so a run is a deterministic function of its
// seed and data order: what the equivalence and resume tests rely on. The GPT's dropout draws
// from a torch::TensorParallelRng (its two streams are checkpointed with the run).
//
// make_tensor_parallel_gpt builds, from the single-process GPT, the same model split over a TP
// group (tensor_parallel_gpt.cc): its logits are the vocabulary-parallel [batch, context,
// Vp / tp] pieces, so its loss is torch::vocab_parallel_cross_entropy.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/torch/tensor_parallel_rng.h"

namespace braid::train {

// Every model is a torch::nn::Sequential of layers (registered as "layers"), so that pipeline
// parallelism (--pp) can cut it between any two layers (torch/sequential_stage.h).
class TrainModel : public ::torch::nn::Module {
 public:
  explicit TrainModel(::torch::nn::Sequential layers) : layers_(register_module("layers", std::move(layers))) {}
  // images: [batch, 1, 28, 28] -> [batch, 10]; tokens: [batch, context] (int64) -> [batch, context, vocab].
  ::torch::Tensor forward(const ::torch::Tensor& input) { return layers_->forward(input); }
  ::torch::nn::Sequential layers() const { return layers_; }

 private:
  ::torch::nn::Sequential layers_;
};

struct ModelSpec {
  std::string name;          // "mlp", "cnn", "gpt", "gpt-small"
  std::int64_t vocab = 0;    // gpt: tokens
  std::int64_t context = 0;  // gpt: sequence length
  std::int64_t width = 128, layers = 6, heads = 4;  // gpt
  double dropout = 0;        // gpt: embeddings, attention probabilities, residual branches
  torch::TensorParallelRng* rng = nullptr;  // gpt: required when dropout > 0; outlives the model
};

struct TensorParallelOptions {
  bool sequence_parallel = false;
  torch::TensorParallelRng* rng = nullptr;  // required when the model has dropout
};

// Builds the model with parameters initialised from torch's generator (seed it first).
// Throws InvalidArgument for an unknown name.
std::shared_ptr<TrainModel> make_model(const ModelSpec& spec);

// The classifiers (image_models.cc) and the transformer (gpt_model.cc).
std::shared_ptr<TrainModel> make_mlp();
std::shared_ptr<TrainModel> make_cnn();
std::shared_ptr<TrainModel> make_gpt(const ModelSpec& spec);

// Collective over `tp`. REQUIRES: `full` was made by make_gpt; `tp` outlives the result.
// Throws InvalidArgument naming the layer for a shape tp does not split.
std::shared_ptr<TrainModel> make_tensor_parallel_gpt(TrainModel& full, Communicator& tp, TensorParallelOptions options);
// Collective over the TP group: the TP model's parameters, gathered, into `full`.
void unshard_tensor_parallel_gpt(TrainModel& sharded, TrainModel& full);

}  // namespace braid::train
