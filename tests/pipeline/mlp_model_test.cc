// The hand-written backward of the test MLP against finite differences, so that the
// pipeline-vs-single-process comparison compares correct gradients, not two copies of a bug.
#include "mlp_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace braid::testing {
namespace {

double step_loss(const MlpConfig& config, std::vector<DenseLayer> model) {
  double loss = 0;
  for (int mb = 0; mb < config.microbatches; ++mb) {
    std::vector<float> x = microbatch_input(config, 0, mb);
    for (const DenseLayer& layer : model) x = layer_forward(layer, x, config.rows);
    std::vector<float> t = microbatch_target(config, 0, mb);
    for (std::size_t k = 0; k < x.size(); ++k) loss += 0.5 * (x[k] - t[k]) * (x[k] - t[k]);
  }
  return loss / (config.rows * config.microbatches);
}

TEST(MlpModel, BackwardMatchesFiniteDifferences) {
  MlpConfig config;
  config.layers = 3;
  config.microbatches = 2;
  std::vector<DenseLayer> model = make_mlp(config);
  std::vector<std::vector<float>> grads;
  std::vector<DenseLayer> trained = model;
  reference_train(config, trained, 1, grads);
  // Central differences in float with h = 1e-2: truncation error O(h^2) ~ 1e-4 relative on
  // these smooth (tanh) functions, rounding error ~ 1e-7 / h ~ 1e-5; 2e-3 absolute plus 2%
  // relative is comfortably above both and far below a wrong formula's error (O(gradient)).
  constexpr float h = 1e-2f;
  for (std::size_t l = 0; l < model.size(); ++l) {
    for (std::size_t k = 0; k < model[l].weight.size(); k += 7) {
      std::vector<DenseLayer> plus = model, minus = model;
      plus[l].weight[k] += h;
      minus[l].weight[k] -= h;
      const double numeric = (step_loss(config, plus) - step_loss(config, minus)) / (2 * h);
      const double analytic = grads[2 * l][k];
      EXPECT_NEAR(analytic, numeric, 2e-3 + 0.02 * std::fabs(numeric)) << "layer " << l << " weight " << k;
    }
    for (std::size_t k = 0; k < model[l].bias.size(); ++k) {
      std::vector<DenseLayer> plus = model, minus = model;
      plus[l].bias[k] += h;
      minus[l].bias[k] -= h;
      const double numeric = (step_loss(config, plus) - step_loss(config, minus)) / (2 * h);
      EXPECT_NEAR(grads[2 * l + 1][k], numeric, 2e-3 + 0.02 * std::fabs(numeric)) << "layer " << l << " bias " << k;
    }
  }
}

}  // namespace
}  // namespace braid::testing
