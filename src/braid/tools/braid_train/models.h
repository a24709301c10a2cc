// braid-train's models: `mlp` and `cnn` classify Fashion-MNIST images, `gpt` is a small
// decoder-only transformer trained as a character-level language model. Each returns logits;
// the trainer applies the cross-entropy (mean over samples, or over tokens for gpt).
//
// None uses dropout or other randomness in forward, so a run is a deterministic function of its
// seed and data order: what the equivalence and resume tests rely on.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

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
  std::string name;          // "mlp", "cnn", "gpt"
  std::int64_t vocab = 0;    // gpt: tokens
  std::int64_t context = 0;  // gpt: sequence length
};

// Builds the model with parameters initialised from torch's generator (seed it first).
// Throws InvalidArgument for an unknown name.
std::shared_ptr<TrainModel> make_model(const ModelSpec& spec);

// The classifiers (image_models.cc) and the transformer (gpt_model.cc).
std::shared_ptr<TrainModel> make_mlp();
std::shared_ptr<TrainModel> make_cnn();
std::shared_ptr<TrainModel> make_gpt(std::int64_t vocab, std::int64_t context);

}  // namespace braid::train
