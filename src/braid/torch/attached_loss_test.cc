// attach_loss: the gradients of (task(y) with the loss attached to y) equal those of
// task(y) + scale x loss, the values of y are untouched, and a non-scalar loss is refused.
#include "braid/torch/attached_loss.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

struct Graph {
  ::torch::Tensor w, v;
  Graph() {
    ::torch::manual_seed(7);
    w = ::torch::randn({4, 3}, ::torch::kFloat64).requires_grad_(true);
    v = ::torch::randn({3}, ::torch::kFloat64).requires_grad_(true);
  }
  ::torch::Tensor activation(const ::torch::Tensor& x) const { return ::torch::tanh(x.matmul(w)); }
  ::torch::Tensor side_loss(const ::torch::Tensor& y) const { return (y * v).pow(2).mean(); }
};

TEST(AttachLossTest, GradientsEqualAddingTheScaledLoss) {
  ::torch::Tensor x = ::torch::randn({5, 4}, ::torch::kFloat64);
  const double scale = 0.25;
  Graph added, attached;
  ::torch::Tensor y1 = added.activation(x);
  (y1.sum() + scale * added.side_loss(y1)).backward();

  ::torch::Tensor y2 = attached.activation(x);
  ::torch::Tensor z = attach_loss(y2, attached.side_loss(y2), scale);
  EXPECT_TRUE(::torch::equal(z, y2));
  z.sum().backward();  // the task loss alone: the side loss rides along
  // Exact in float64 up to the order in which autograd sums the two paths into w.
  EXPECT_TRUE(::torch::allclose(attached.w.grad(), added.w.grad(), 1e-14, 1e-14));
  EXPECT_TRUE(::torch::allclose(attached.v.grad(), added.v.grad(), 1e-14, 1e-14));
  EXPECT_GT(attached.v.grad().abs().max().item<double>(), 0);  // the side loss was differentiated
}

TEST(AttachLossTest, ALossWithoutGradientLeavesTheOutputAlone) {
  ::torch::Tensor y = ::torch::ones({2, 2});
  EXPECT_TRUE(attach_loss(y, ::torch::zeros({}), 1.0).is_same(y));
}

TEST(AttachLossTest, NonScalarLossOrBadScaleIsRefused) {
  ::torch::Tensor y = ::torch::ones({2, 2}, ::torch::TensorOptions().requires_grad(true));
  EXPECT_THROW(attach_loss(y, y.sum(0), 1.0), InvalidArgument);
  EXPECT_THROW(attach_loss(y, y.sum(), std::nan("")), InvalidArgument);
}

}  // namespace
}  // namespace braid::torch
