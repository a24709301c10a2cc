#include "braid/torch/tensor_parallel_layers.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/torch/tensor_parallel_mappings.h"

namespace braid::torch {
namespace {

using ::torch::Tensor;

void require_divisible(const Communicator& tp, std::int64_t size, std::int64_t by, const std::string& layer,
                       const LinearWeights& full, const char* what) {
  if (size % by == 0) return;
  throw InvalidArgument({.rank = tp.rank(), .op = "tensor parallelism"},
                        fmt::format("{} ({} -> {} features): its {} features ({}) are not divisible by {} (tp {})",
                                    layer, full.weight.size(1), full.weight.size(0), what, size, by, tp.size()));
}

Tensor detached_copy(const Tensor& t) { return t.detach().clone().contiguous(); }

// What CPU autocast would hand the linear: a floating input other than fp64 (which autocast
// leaves alone) in its lower precision (bf16), so the collective before the linear moves that
// (see the header); unchanged outside autocast.
Tensor as_autocast_operand(const Tensor& x) {
  if (!at::autocast::is_cpu_enabled() || !x.is_floating_point() || x.scalar_type() == at::kDouble) return x;
  return x.to(at::autocast::get_autocast_cpu_dtype());
}

}  // namespace

void LinearWeights::copy_into(::torch::nn::Linear& linear, std::int64_t rows) const {
  ::torch::NoGradGuard no_grad;
  std::int64_t n = rows >= 0 ? rows : weight.size(0);
  linear->weight.copy_(weight.narrow(0, 0, n));
  if (bias.defined()) linear->bias.copy_(bias.narrow(0, 0, n));
}

Tensor split_rows(const Tensor& full, int rank, int tp, std::int64_t parts) {
  std::int64_t block = full.size(0) / parts, local = block / tp;
  std::vector<Tensor> pieces;
  for (std::int64_t p = 0; p < parts; ++p) pieces.push_back(full.narrow(0, p * block + rank * local, local));
  return ::torch::cat(pieces, 0).contiguous();
}

// The gathered rows arrive rank-major ([rank][part][local]); each part's pieces are put back
// together in rank order.
Tensor gather_rows(const Tensor& shard, Communicator& tp, std::int64_t parts) {
  Tensor by_rank = tp_gather_tensor(shard, tp, 0);  // [tp * parts * local, ...]
  if (parts == 1) return by_rank;
  std::int64_t local = shard.size(0) / parts;
  std::vector<Tensor> pieces;
  for (std::int64_t p = 0; p < parts; ++p) {
    for (int r = 0; r < tp.size(); ++r) pieces.push_back(by_rank.narrow(0, (r * parts + p) * local, local));
  }
  return ::torch::cat(pieces, 0).contiguous();
}

ColumnParallelLinearImpl::ColumnParallelLinearImpl(Communicator& tp, const LinearWeights& full,
                                                   ColumnParallelOptions options)
    : tp_(&tp), options_(std::move(options)) {
  std::int64_t out = full.weight.size(0);
  require_divisible(tp, out, tp.size() * options_.parts, options_.name, full, "output");
  if (options_.gather_output && options_.parts > 1) {
    throw InvalidArgument({.rank = tp.rank(), .op = "tensor parallelism"},
                          fmt::format("{}: gather_output with {} fused parts would interleave them", options_.name,
                                      options_.parts));
  }
  weight = register_parameter("weight", split_rows(detached_copy(full.weight), tp.rank(), tp.size(), options_.parts));
  if (full.bias.defined()) {
    bias = register_parameter("bias", split_rows(detached_copy(full.bias), tp.rank(), tp.size(), options_.parts));
  }
}

Tensor ColumnParallelLinearImpl::forward(const Tensor& x) {
  Tensor x16 = as_autocast_operand(x);
  Tensor input = options_.sequence_parallel ? gather_from_sp(x16, *tp_, options_.sequence_dim) : copy_to_tp(x16, *tp_);
  Tensor y = ::torch::nn::functional::linear(input, weight, bias);
  return options_.gather_output ? gather_from_tp(y, *tp_, -1) : y;
}

std::vector<Tensor> ColumnParallelLinearImpl::split_parameters() const {
  if (bias.defined()) return {weight, bias};
  return {weight};
}

LinearWeights ColumnParallelLinearImpl::gathered() {
  ::torch::NoGradGuard no_grad;
  LinearWeights full{.weight = gather_rows(weight.detach(), *tp_, options_.parts)};
  if (bias.defined()) full.bias = gather_rows(bias.detach(), *tp_, options_.parts);
  return full;
}

RowParallelLinearImpl::RowParallelLinearImpl(Communicator& tp, const LinearWeights& full, RowParallelOptions options)
    : tp_(&tp), options_(std::move(options)) {
  require_divisible(tp, full.weight.size(1), tp.size(), options_.name, full, "input");
  weight = register_parameter("weight", tp_piece(detached_copy(full.weight), tp, 1));
  if (full.bias.defined()) bias = register_parameter("bias", detached_copy(full.bias));
}

Tensor RowParallelLinearImpl::forward(const Tensor& x) {
  Tensor input = options_.input_is_parallel ? x : scatter_to_tp(x, *tp_, -1);
  Tensor partial = ::torch::matmul(input, weight.t());
  Tensor y = options_.sequence_parallel ? reduce_scatter_to_sp(partial, *tp_, options_.sequence_dim)
                                        : reduce_from_tp(partial, *tp_);
  return bias.defined() ? y + bias : y;
}

std::vector<Tensor> RowParallelLinearImpl::split_parameters() const { return {weight}; }

LinearWeights RowParallelLinearImpl::gathered() {
  ::torch::NoGradGuard no_grad;
  return {.weight = tp_gather_tensor(weight.detach(), *tp_, 1), .bias = bias.defined() ? bias.detach() : Tensor()};
}

}  // namespace braid::torch
