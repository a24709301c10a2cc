#include "braid/torch/attached_loss.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

using ::torch::Tensor;
using ::torch::autograd::AutogradContext;
using ::torch::autograd::tensor_list;

struct AttachLoss : public ::torch::autograd::Function<AttachLoss> {
  static Tensor forward(AutogradContext* ctx, const Tensor& output, const Tensor& loss, double scale) {
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["dtype"] = static_cast<std::int64_t>(loss.scalar_type());  // the seed's
    return output.view_as(output);  // an alias: autograd needs an output distinct from the input
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    double scale = ctx->saved_data["scale"].toDouble();
    auto dtype = static_cast<::torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grads[0], ::torch::full({}, scale, ::torch::TensorOptions().dtype(dtype)), Tensor()};
  }
};

}  // namespace

Tensor attach_loss(const Tensor& output, const Tensor& loss, double scale) {
  if (loss.dim() != 0) {
    throw InvalidArgument({.op = "attach_loss"}, fmt::format("the attached loss must be a scalar (got {} dimensions)",
                                                             loss.dim()));
  }
  if (!std::isfinite(scale)) throw InvalidArgument({.op = "attach_loss"}, fmt::format("scale {} is not finite", scale));
  if (!loss.requires_grad()) return output;  // nothing to differentiate (evaluation, a coefficient of 0)
  return AttachLoss::apply(output, loss, scale);
}

}  // namespace braid::torch
