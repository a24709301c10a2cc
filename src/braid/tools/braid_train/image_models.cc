#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/tools/braid_train/models.h"

namespace braid::train {
namespace {

namespace nn = ::torch::nn;

// 784-1024-1024-10 with ReLU: 1.86 M parameters, the size of the reference MLP (most of
// the time goes into two large matrix products, so it measures BLAS and gradient traffic).
class Mlp : public TrainModel {
 public:
  Mlp()
      : fc1_(register_module("fc1", nn::Linear(784, 1024))),
        fc2_(register_module("fc2", nn::Linear(1024, 1024))),
        fc3_(register_module("fc3", nn::Linear(1024, 10))) {}

  ::torch::Tensor forward(const ::torch::Tensor& images) override {
    ::torch::Tensor x = images.reshape({images.size(0), -1});
    x = ::torch::relu(fc1_->forward(x));
    x = ::torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  nn::Linear fc1_, fc2_, fc3_;
};

// Two conv-BN-ReLU-pool blocks (32, 64 channels) and two linear layers: 0.42 M parameters.
// BatchNorm's running statistics are buffers: DDP broadcasts rank 0's after every step.
class Cnn : public TrainModel {
 public:
  Cnn()
      : conv1_(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        bn1_(register_module("bn1", nn::BatchNorm2d(32))),
        conv2_(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        bn2_(register_module("bn2", nn::BatchNorm2d(64))),
        fc1_(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2_(register_module("fc2", nn::Linear(128, 10))) {}

  ::torch::Tensor forward(const ::torch::Tensor& images) override {
    ::torch::Tensor x = ::torch::max_pool2d(::torch::relu(bn1_->forward(conv1_->forward(images))), 2);
    x = ::torch::max_pool2d(::torch::relu(bn2_->forward(conv2_->forward(x))), 2);
    x = ::torch::relu(fc1_->forward(x.reshape({x.size(0), -1})));
    return fc2_->forward(x);
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Linear fc1_, fc2_;
};

}  // namespace

std::shared_ptr<TrainModel> make_mlp() { return std::make_shared<Mlp>(); }
std::shared_ptr<TrainModel> make_cnn() { return std::make_shared<Cnn>(); }

std::shared_ptr<TrainModel> make_model(const ModelSpec& spec) {
  if (spec.name == "mlp") return make_mlp();
  if (spec.name == "cnn") return make_cnn();
  if (spec.name == "gpt") return make_gpt(spec.vocab, spec.context);
  throw InvalidArgument({.op = "make_model"}, fmt::format("unknown model '{}' (mlp, cnn or gpt)", spec.name));
}

}  // namespace braid::train
