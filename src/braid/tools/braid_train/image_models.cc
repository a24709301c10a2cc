#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/tools/braid_train/models.h"

namespace braid::train {
namespace {

namespace nn = ::torch::nn;

// 784-1024-1024-10 with ReLU: 1.86 M parameters, the size of the reference MLP (most of
// the time goes into two large matrix products, so it measures BLAS and gradient traffic).
// Layers are appended one statement at a time: initialisation draws from torch's generator in
// construction order, and a function's arguments have no evaluation order (GCC goes right to
// left), so Sequential(a, b, c) would initialise the last layer first — unlike PyTorch.
nn::Sequential mlp_layers() {
  nn::Sequential s;
  s->push_back(nn::Flatten());
  s->push_back(nn::Linear(784, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 10));
  return s;
}

// Two conv-BN-ReLU-pool blocks (32, 64 channels) and two linear layers: 0.42 M parameters.
// BatchNorm's running statistics are buffers: DDP broadcasts rank 0's after every step.
nn::Sequential cnn_layers() {
  nn::Sequential s;
  s->push_back(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)));
  s->push_back(nn::BatchNorm2d(32));
  s->push_back(nn::ReLU());
  s->push_back(nn::MaxPool2d(2));
  s->push_back(nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)));
  s->push_back(nn::BatchNorm2d(64));
  s->push_back(nn::ReLU());
  s->push_back(nn::MaxPool2d(2));
  s->push_back(nn::Flatten());
  s->push_back(nn::Linear(64 * 7 * 7, 128));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(128, 10));
  return s;
}

}  // namespace

std::shared_ptr<TrainModel> make_mlp() { return std::make_shared<TrainModel>(mlp_layers()); }
std::shared_ptr<TrainModel> make_cnn() { return std::make_shared<TrainModel>(cnn_layers()); }

std::shared_ptr<TrainModel> make_model(const ModelSpec& spec) {
  if (spec.name == "mlp") return make_mlp();
  if (spec.name == "cnn") return make_cnn();
  if (spec.name == "gpt" || spec.name == "gpt-small") return make_gpt(spec);
  throw InvalidArgument({.op = "make_model"}, fmt::format("unknown model '{}' (mlp, cnn, gpt or gpt-small)", spec.name));
}

}  // namespace braid::train
