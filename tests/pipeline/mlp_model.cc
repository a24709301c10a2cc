#include "mlp_model.h"

#include <cmath>

#include "braid/base/splitmix64.h"

namespace braid::testing {
namespace {

int width_after(const MlpConfig& c, int layer) { return layer == c.layers - 1 ? c.output_width : c.hidden_width; }
int width_before(const MlpConfig& c, int layer) { return layer == 0 ? c.input_width : c.hidden_width; }

// A deterministic value in [-1, 1) from an integer (SplitMix64's first draw from it).
float unit_noise(std::uint64_t x) { return static_cast<float>(SplitMix64(x).next_unit() * 2.0 - 1.0); }

}  // namespace

std::vector<DenseLayer> make_mlp(const MlpConfig& config) {
  std::vector<DenseLayer> model;
  for (int l = 0; l < config.layers; ++l) {
    DenseLayer layer;
    layer.in = width_before(config, l);
    layer.out = width_after(config, l);
    const float scale = 1.5f / std::sqrt(static_cast<float>(layer.in));
    for (int i = 0; i < layer.in * layer.out; ++i) layer.weight.push_back(scale * unit_noise(1000003ULL * l + i));
    for (int i = 0; i < layer.out; ++i) layer.bias.push_back(0.1f * unit_noise(7000001ULL * l + i + 17));
    layer.grad_weight.assign(layer.weight.size(), 0.0f);
    layer.grad_bias.assign(layer.bias.size(), 0.0f);
    model.push_back(std::move(layer));
  }
  return model;
}

std::vector<float> microbatch_input(const MlpConfig& config, int step, int mb) {
  std::vector<float> x;
  for (int i = 0; i < config.rows * config.input_width; ++i)
    x.push_back(unit_noise(1ULL << 40 | (step * 7919ULL + mb) << 16 | i));
  return x;
}

std::vector<float> microbatch_target(const MlpConfig& config, int step, int mb) {
  std::vector<float> t;
  for (int i = 0; i < config.rows * config.output_width; ++i)
    t.push_back(0.8f * unit_noise(1ULL << 41 | (step * 7919ULL + mb) << 16 | i));
  return t;
}

std::vector<float> layer_forward(const DenseLayer& layer, const std::vector<float>& x, int rows) {
  std::vector<float> y(static_cast<std::size_t>(rows * layer.out));
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < layer.out; ++o) {
      float z = layer.bias[static_cast<std::size_t>(o)];
      for (int i = 0; i < layer.in; ++i) {
        z += x[static_cast<std::size_t>(r * layer.in + i)] * layer.weight[static_cast<std::size_t>(o * layer.in + i)];
      }
      y[static_cast<std::size_t>(r * layer.out + o)] = std::tanh(z);
    }
  }
  return y;
}

std::vector<float> layer_backward_input(const DenseLayer& layer, const std::vector<float>& y,
                                        const std::vector<float>& grad_y, int rows, std::vector<float>& dz) {
  dz.resize(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) dz[k] = grad_y[k] * (1.0f - y[k] * y[k]);
  std::vector<float> dx(static_cast<std::size_t>(rows * layer.in), 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < layer.out; ++o) {
      const float g = dz[static_cast<std::size_t>(r * layer.out + o)];
      for (int i = 0; i < layer.in; ++i) {
        dx[static_cast<std::size_t>(r * layer.in + i)] += g * layer.weight[static_cast<std::size_t>(o * layer.in + i)];
      }
    }
  }
  return dx;
}

void layer_backward_weight(DenseLayer& layer, const std::vector<float>& x, const std::vector<float>& dz, int rows) {
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < layer.out; ++o) {
      const float g = dz[static_cast<std::size_t>(r * layer.out + o)];
      for (int i = 0; i < layer.in; ++i) {
        layer.grad_weight[static_cast<std::size_t>(o * layer.in + i)] +=
            g * x[static_cast<std::size_t>(r * layer.in + i)];
      }
      layer.grad_bias[static_cast<std::size_t>(o)] += g;
    }
  }
}

std::vector<float> loss_gradient(const MlpConfig& config, const std::vector<float>& y,
                                 const std::vector<float>& target) {
  const float scale = 1.0f / static_cast<float>(config.rows * config.microbatches);
  std::vector<float> g(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) g[k] = (y[k] - target[k]) * scale;
  return g;
}

void sgd_step(std::vector<DenseLayer>& model, int begin, int end, float learning_rate) {
  for (int l = begin; l < end; ++l) {
    DenseLayer& layer = model[static_cast<std::size_t>(l)];
    for (std::size_t k = 0; k < layer.weight.size(); ++k) layer.weight[k] -= learning_rate * layer.grad_weight[k];
    for (std::size_t k = 0; k < layer.bias.size(); ++k) layer.bias[k] -= learning_rate * layer.grad_bias[k];
    layer.grad_weight.assign(layer.weight.size(), 0.0f);
    layer.grad_bias.assign(layer.bias.size(), 0.0f);
  }
}

void reference_train(const MlpConfig& config, std::vector<DenseLayer>& model, int steps,
                     std::vector<std::vector<float>>& last_gradients) {
  for (int step = 0; step < steps; ++step) {
    for (int mb = 0; mb < config.microbatches; ++mb) {
      std::vector<std::vector<float>> activations{microbatch_input(config, step, mb)};
      for (const DenseLayer& layer : model)
        activations.push_back(layer_forward(layer, activations.back(), config.rows));
      std::vector<float> grad = loss_gradient(config, activations.back(), microbatch_target(config, step, mb));
      for (int l = config.layers - 1; l >= 0; --l) {
        std::vector<float> dz;
        DenseLayer& layer = model[static_cast<std::size_t>(l)];
        grad = layer_backward_input(layer, activations[static_cast<std::size_t>(l) + 1], grad, config.rows, dz);
        layer_backward_weight(layer, activations[static_cast<std::size_t>(l)], dz, config.rows);
      }
    }
    last_gradients.clear();
    for (const DenseLayer& layer : model) {
      last_gradients.push_back(layer.grad_weight);
      last_gradients.push_back(layer.grad_bias);
    }
    sgd_step(model, 0, config.layers, config.learning_rate);
  }
}

MlpStage::MlpStage(const MlpConfig& config, std::vector<DenseLayer>& model, parallel::LayerPartition partition,
                   int stage)
    : config_(config), model_(model), partition_(std::move(partition)), stage_(stage) {}

bool MlpStage::first_virtual(int chunk) const { return layers_of(chunk).begin == 0; }
bool MlpStage::last_virtual(int chunk) const { return layers_of(chunk).end == config_.layers; }

parallel::TensorShape MlpStage::input_shape(int chunk) const {
  if (chunk == 0 && wrong_input_width_ > 0) return {config_.rows, wrong_input_width_};
  return {config_.rows, model_[static_cast<std::size_t>(layers_of(chunk).begin)].in};
}

parallel::TensorShape MlpStage::output_shape(int chunk) const {
  return {config_.rows, model_[static_cast<std::size_t>(layers_of(chunk).end - 1)].out};
}

parallel::StageTensor MlpStage::forward(int mb, int chunk, const parallel::StageTensor& input) {
  Saved& saved = saved_[{mb, chunk}];
  std::vector<float> x = first_virtual(chunk) ? microbatch_input(config_, step_, mb) : input.data;
  for (int l = layers_of(chunk).begin; l < layers_of(chunk).end; ++l) {
    saved.inputs.push_back(x);
    x = layer_forward(model_[static_cast<std::size_t>(l)], x, config_.rows);
    saved.outputs.push_back(x);
  }
  if (mb == truncated_mb_) {
    x.resize(x.size() - static_cast<std::size_t>(config_.rows));
    return {{config_.rows, output_shape(chunk)[1] - 1}, std::move(x)};
  }
  return {output_shape(chunk), std::move(x)};
}

parallel::StageTensor MlpStage::backward_input(int mb, int chunk, const parallel::StageTensor& grad_output) {
  Saved& saved = saved_.at({mb, chunk});
  std::vector<float> grad = last_virtual(chunk)
                                ? loss_gradient(config_, saved.outputs.back(), microbatch_target(config_, step_, mb))
                                : grad_output.data;
  const int begin = layers_of(chunk).begin;
  saved.dz.resize(saved.outputs.size());
  for (int l = layers_of(chunk).end - 1; l >= begin; --l) {
    const auto k = static_cast<std::size_t>(l - begin);
    grad = layer_backward_input(model_[static_cast<std::size_t>(l)], saved.outputs[k], grad, config_.rows, saved.dz[k]);
  }
  return {input_shape(chunk), std::move(grad)};
}

void MlpStage::backward_weight(int mb, int chunk) {
  auto found = saved_.find({mb, chunk});
  const int begin = layers_of(chunk).begin;
  for (int l = begin; l < layers_of(chunk).end; ++l) {
    const auto k = static_cast<std::size_t>(l - begin);
    layer_backward_weight(model_[static_cast<std::size_t>(l)], found->second.inputs[k], found->second.dz[k],
                          config_.rows);
  }
  saved_.erase(found);
}

}  // namespace braid::testing
