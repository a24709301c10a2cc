#include "braid/torch/tensor_parallel_mappings.h"

#include <fmt/format.h>

#include <cstdint>

#include "braid/base/error.h"
#include "braid/parallel/tensor_parallel.h"
#include "braid/torch/tensor_dtype.h"

namespace braid::torch {
namespace {

using ::torch::Tensor;
using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

std::int64_t positive_dim(const Tensor& x, std::int64_t dim, const Communicator& tp, const char* op) {
  std::int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (d < 0 || d >= x.dim()) {
    throw InvalidArgument({.rank = tp.rank(), .op = op},
                          fmt::format("dimension {} of a tensor of shape {}", dim, fmt::join(x.sizes(), "x")));
  }
  return d;
}

// [outer, local, inner] around dimension d, with `local` the size of d in `x`.
parallel::SplitShape split_shape(const Tensor& x, std::int64_t d) {
  parallel::SplitShape s{.outer = 1, .local = x.size(d), .inner = 1};
  for (std::int64_t i = 0; i < d; ++i) s.outer *= x.size(i);
  for (std::int64_t i = d + 1; i < x.dim(); ++i) s.inner *= x.size(i);
  return s;
}

std::vector<std::int64_t> sizes_with(const Tensor& x, std::int64_t d, std::int64_t size) {
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes[static_cast<std::size_t>(d)] = size;
  return sizes;
}

thread_local SplitBackwardScope::Pass split_backward_pass = SplitBackwardScope::Pass::kNone;

enum class Comm : std::int64_t { kIdentity, kAllreduce, kPiece, kGather, kReduceScatter };

Tensor communicate(Comm comm, const Tensor& x, Communicator& tp, std::int64_t dim) {
  switch (comm) {
    case Comm::kIdentity:
      return x;
    case Comm::kAllreduce:
      return tp_allreduce_tensor(x, tp);
    case Comm::kPiece:
      return tp_piece(x, tp, dim);
    case Comm::kGather:
      return tp_gather_tensor(x, tp, dim);
    case Comm::kReduceScatter:
      return tp_reduce_scatter_tensor(x, tp, dim);
  }
  return x;
}

// One mapping: `forward` on the way in, `backward` on the gradient. The communicator travels
// as an integer: the autograd context stores IValues only.
struct Mapping : public ::torch::autograd::Function<Mapping> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, std::int64_t comm, std::int64_t forward,
                        std::int64_t backward, std::int64_t dim) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["backward"] = backward;
    ctx->saved_data["dim"] = dim;
    return communicate(static_cast<Comm>(forward), x, *reinterpret_cast<Communicator*>(comm), dim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    using Pass = SplitBackwardScope::Pass;
    if (split_backward_pass == Pass::kWeight) {
      auto kept = ctx->saved_data.find("input-pass result");
      if (kept != ctx->saved_data.end()) {
        Tensor g = kept->second.toTensor();
        ctx->saved_data.erase(kept);
        return {g, Tensor(), Tensor(), Tensor(), Tensor()};
      }
    }
    auto* tp = reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
    Tensor g = communicate(static_cast<Comm>(ctx->saved_data["backward"].toInt()), grads[0], *tp,
                           ctx->saved_data["dim"].toInt());
    if (split_backward_pass == Pass::kInput) ctx->saved_data["input-pass result"] = g;
    return {g, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

Tensor map(const Tensor& x, Communicator& tp, Comm forward, Comm backward, std::int64_t dim) {
  if (tp.size() == 1) return x;
  return Mapping::apply(x, reinterpret_cast<std::int64_t>(&tp), static_cast<std::int64_t>(forward),
                        static_cast<std::int64_t>(backward), dim);
}

}  // namespace

SplitBackwardScope::SplitBackwardScope(Pass pass) : previous_(split_backward_pass) { split_backward_pass = pass; }
SplitBackwardScope::~SplitBackwardScope() { split_backward_pass = previous_; }
SplitBackwardScope::Pass SplitBackwardScope::current() { return split_backward_pass; }

Tensor tp_allreduce_tensor(const Tensor& x, Communicator& tp) {
  Tensor out = x.contiguous().clone();
  if (tp.size() > 1) parallel::tp_allreduce(tp, out.data_ptr(), out.numel(), braid_dtype(out, "tp allreduce"));
  return out;
}

Tensor tp_gather_tensor(const Tensor& x, Communicator& tp, std::int64_t dim) {
  std::int64_t d = positive_dim(x, dim, tp, "tp gather");
  if (tp.size() == 1) return x.contiguous();
  Tensor shard = x.contiguous();
  Tensor full = ::torch::empty(sizes_with(shard, d, shard.size(d) * tp.size()), shard.options());
  parallel::gather_along(tp, shard.data_ptr(), full.data_ptr(), split_shape(shard, d), braid_dtype(shard, "tp gather"));
  return full;
}

Tensor tp_reduce_scatter_tensor(const Tensor& x, Communicator& tp, std::int64_t dim) {
  std::int64_t d = positive_dim(x, dim, tp, "tp reduce-scatter");
  if (tp.size() == 1) return x.contiguous();
  if (x.size(d) % tp.size() != 0) {
    throw InvalidArgument({.rank = tp.rank(), .op = "tp reduce-scatter"},
                          fmt::format("dimension {} of shape {} is not divisible by the {} ranks of the TP group", d,
                                      fmt::join(x.sizes(), "x"), tp.size()));
  }
  Tensor full = x.contiguous();
  Tensor shard = ::torch::empty(sizes_with(full, d, full.size(d) / tp.size()), full.options());
  parallel::reduce_scatter_along(tp, full.data_ptr(), shard.data_ptr(), split_shape(shard, d),
                                 braid_dtype(full, "tp reduce-scatter"));
  return shard;
}

Tensor tp_piece(const Tensor& x, const Communicator& tp, std::int64_t dim) {
  std::int64_t d = positive_dim(x, dim, tp, "tp split");
  if (x.size(d) % tp.size() != 0) {
    throw InvalidArgument({.rank = tp.rank(), .op = "tp split"},
                          fmt::format("dimension {} of shape {} is not divisible by the {} ranks of the TP group", d,
                                      fmt::join(x.sizes(), "x"), tp.size()));
  }
  std::int64_t local = x.size(d) / tp.size();
  return x.narrow(d, tp.rank() * local, local).contiguous();
}

Tensor copy_to_tp(const Tensor& x, Communicator& tp) { return map(x, tp, Comm::kIdentity, Comm::kAllreduce, 0); }
Tensor reduce_from_tp(const Tensor& x, Communicator& tp) { return map(x, tp, Comm::kAllreduce, Comm::kIdentity, 0); }
Tensor scatter_to_tp(const Tensor& x, Communicator& tp, std::int64_t dim) {
  return map(x, tp, Comm::kPiece, Comm::kGather, dim);
}
Tensor gather_from_tp(const Tensor& x, Communicator& tp, std::int64_t dim) {
  return map(x, tp, Comm::kGather, Comm::kPiece, dim);
}
Tensor gather_from_sp(const Tensor& x, Communicator& tp, std::int64_t dim) {
  return map(x, tp, Comm::kGather, Comm::kReduceScatter, dim);
}
Tensor reduce_scatter_to_sp(const Tensor& x, Communicator& tp, std::int64_t dim) {
  return map(x, tp, Comm::kReduceScatter, Comm::kGather, dim);
}

}  // namespace braid::torch
