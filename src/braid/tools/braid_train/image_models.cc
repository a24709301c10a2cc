#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/tools/braid_train/models.h"

namespace braid::train {
namespace {

namespace nn = ::torch::nn;

// 784-1024-1024-10 with ReLU: 1.86 M parameters, the size of the reference MLP (most of
// the time goes into two large matrix products, so it measures BLAS and gradient traffic).
nn::Sequential mlp_layers() {
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 1024), nn::ReLU(), nn::Linear(1024, 1024), nn::ReLU(),
                        nn::Linear(1024, 10));
}

// Two conv-BN-ReLU-pool blocks (32, 64 channels) and two linear layers: 0.42 M parameters.
// BatchNorm's running statistics are buffers: DDP broadcasts rank 0's after every step.
nn::Sequential cnn_layers() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::BatchNorm2d(32), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::BatchNorm2d(64),
                        nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU(),
                        nn::Linear(128, 10));
}

}  // namespace

std::shared_ptr<TrainModel> make_mlp() { return std::make_shared<TrainModel>(mlp_layers()); }
std::shared_ptr<TrainModel> make_cnn() { return std::make_shared<TrainModel>(cnn_layers()); }

std::shared_ptr<TrainModel> make_model(const ModelSpec& spec) {
  if (spec.name == "mlp") return make_mlp();
  if (spec.name == "cnn") return make_cnn();
  if (spec.name == "gpt") return make_gpt(spec.vocab, spec.context);
  throw InvalidArgument({.op = "make_model"}, fmt::format("unknown model '{}' (mlp, cnn or gpt)", spec.name));
}

}  // namespace braid::train
