// The MoE gate's choices and losses against values worked by hand (moe_gate.h).
#include "braid/torch/moe_gate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

// Three tokens, two experts: probabilities (0.75, 0.25), (0.25, 0.75), (0.75, 0.25); first
// choices 0, 1, 0 so f = (2/3, 1/3); P = (7/12, 5/12); E sum f P = 2 (14/36 + 5/36) = 19/18.
TEST(MoeGateTest, LoadBalancingLossIsExpertsTimesFractionTimesMeanProbability) {
  ::torch::Tensor probs = ::torch::tensor({0.75F, 0.25F, 0.25F, 0.75F, 0.75F, 0.25F}).view({3, 2});
  EXPECT_NEAR(load_balancing_loss(probs, {0, 1, 0}, 1).item<double>(), 19.0 / 18.0, 1e-6);
  // Top-2: only the first choices count in f (Switch / GShard).
  EXPECT_NEAR(load_balancing_loss(probs, {0, 1, 1, 0, 0, 1}, 2).item<double>(), 19.0 / 18.0, 1e-6);
  // Perfect balance gives 1.
  ::torch::Tensor even = ::torch::full({4, 2}, 0.5F);
  EXPECT_NEAR(load_balancing_loss(even, {0, 1, 0, 1}, 1).item<double>(), 1.0, 1e-6);
}

TEST(MoeGateTest, ZLossIsTheMeanSquaredLogSumExp) {
  ::torch::Tensor logits = ::torch::tensor({0.0F, 0.0F, 1.0F, -1.0F}).view({2, 2});
  double a = std::log(2.0), b = std::log(std::exp(1.0) + std::exp(-1.0));
  EXPECT_NEAR(router_z_loss(logits).item<double>(), (a * a + b * b) / 2, 1e-6);
}

TEST(MoeGateTest, TopOneKeepsTheProbabilityTopTwoRenormalises) {
  ::torch::manual_seed(3);
  TopKGate one(4, 3, 1), two(4, 3, 2);
  ::torch::Tensor x = ::torch::randn({5, 4});
  {
    ::torch::NoGradGuard no_grad;
    two->router->weight.copy_(one->router->weight);
  }
  MoeGateOutput g1 = one->forward(x), g2 = two->forward(x);
  ::torch::Tensor top = std::get<0>(g1.probs.max(-1));
  EXPECT_TRUE(::torch::allclose(g1.gates.squeeze(-1), top));
  EXPECT_TRUE(::torch::allclose(g2.gates.sum(-1), ::torch::ones({5})));
  for (int t = 0; t < 5; ++t) {
    EXPECT_EQ(g1.expert_ids[t], g2.expert_ids[2 * t]) << "token " << t << ": the first choice is the top-1 choice";
    EXPECT_NE(g2.expert_ids[2 * t], g2.expert_ids[2 * t + 1]);
  }
  // The gates are differentiable with respect to the router.
  g2.gates.select(1, 0).sum().backward();
  EXPECT_GT(two->router->weight.grad().abs().sum().item<double>(), 0);
}

TEST(MoeGateTest, NoTokensGiveZeroLosses) {
  TopKGate gate(4, 2, 1);
  MoeGateOutput g = gate->forward(::torch::zeros({0, 4}));
  EXPECT_EQ(g.aux_loss.item<double>(), 0);
  EXPECT_EQ(g.z_loss.item<double>(), 0);
  EXPECT_TRUE(g.expert_ids.empty());
}

TEST(MoeGateTest, TopKOutsideTheExpertsIsRefused) {
  EXPECT_THROW(TopKGate(4, 2, 3), InvalidArgument);
  EXPECT_THROW(TopKGate(4, 2, 0), InvalidArgument);
}

}  // namespace
}  // namespace braid::torch
