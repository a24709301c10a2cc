#include "braid/torch/zero_optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"

namespace braid::torch {
namespace {

// The part of one parameter that falls into this rank's real shard [begin, end) of a bucket.
struct Piece {
  int param;
  std::int64_t param_offset;  // element offset inside the parameter
  std::int64_t shard_offset;  // element offset inside the master shard
  std::int64_t count;
};

std::vector<Piece> pieces_of(const engine::Bucket& bucket, const BucketShard& shard,
                             const std::vector<::torch::Tensor>& params) {
  std::vector<Piece> pieces;
  for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
    int id = bucket.params[slot];
    std::int64_t first = bucket.offsets[slot], last = first + params[static_cast<std::size_t>(id)].numel();
    std::int64_t lo = std::max(first, shard.begin), hi = std::min(last, shard.end);
    if (lo < hi) {
      pieces.push_back({.param = id, .param_offset = lo - first, .shard_offset = lo - shard.begin, .count = hi - lo});
    }
  }
  return pieces;
}

::torch::Tensor flat(const ::torch::Tensor& t) { return t.detach().view({-1}); }

}  // namespace

ZeroOptimizer::ZeroOptimizer(DistributedDataParallel& ddp, const OptimizerFactory& make_inner) : ddp_(ddp) {
  ErrorContext context{.rank = ddp_.communicator().rank(), .op = "ZeroOptimizer"};
  int zero_stage = ddp_.options().zero_stage;
  if (zero_stage != 1 && zero_stage != 2) {
    throw InvalidArgument(context, fmt::format("the DistributedDataParallel has zero_stage {}: ZeroOptimizer steps the "
                                               "gradient shards of stage 1 or 2 (DdpOptions::zero_stage)",
                                               zero_stage));
  }
  GradSync& sync = ddp_.grad_sync();
  sync.plan_buckets();
  const std::vector<::torch::Tensor>& params = ddp_.parameters();
  std::vector<::torch::Tensor> masters;
  ::torch::NoGradGuard no_grad;
  for (int b = 0; b < static_cast<int>(sync.plan().buckets.size()); ++b) {
    Shard s{.layout = sync.bucket_shard(b)};
    s.master = ::torch::empty({s.layout.end - s.layout.begin}, ::torch::kFloat32);
    for (const Piece& piece : pieces_of(sync.plan().buckets[static_cast<std::size_t>(b)], s.layout, params)) {
      const ::torch::Tensor& p = params[static_cast<std::size_t>(piece.param)];
      s.master.slice(0, piece.shard_offset, piece.shard_offset + piece.count)
          .copy_(flat(p).slice(0, piece.param_offset, piece.param_offset + piece.count));
    }
    s.master.set_requires_grad(true);
    s.master.mutable_grad() = ::torch::zeros_like(s.master);
    s.gathered = ::torch::zeros({s.layout.padded}, ::torch::kFloat32);
    masters.push_back(s.master);
    shards_.push_back(std::move(s));
  }
  inner_ = make_inner(std::move(masters));
  if (!inner_) throw InvalidArgument(context, "the optimizer factory returned no optimizer");
}

void ZeroOptimizer::load_gradients() {
  if (gradients_loaded_) return;
  GradSync& sync = ddp_.grad_sync();
  int rank = ddp_.communicator().rank();
  for (std::size_t b = 0; b < shards_.size(); ++b) {
    Shard& s = shards_[b];
    std::int64_t real = s.layout.end - s.layout.begin;
    if (real == 0) continue;
    std::span<const float> averaged = sync.shard_gradient(static_cast<int>(b));
    // Element i of the shard is bucket element rank x shard + i; the real part starts at begin.
    std::int64_t skip = s.layout.begin - rank * s.layout.shard;
    BRAID_CHECK(skip >= 0 && skip + real <= static_cast<std::int64_t>(averaged.size()), Mismatch,
                {.rank = rank, .op = "ZeroOptimizer::step"},
                "bucket {}: shard [{}, {}) outside the {} gradient floats of rank {}", b, s.layout.begin,
                s.layout.end, averaged.size(), rank);
    std::copy_n(averaged.data() + skip, real, s.master.mutable_grad().data_ptr<float>());
  }
  gradients_loaded_ = true;
}

void ZeroOptimizer::step() {
  load_gradients();
  inner_->step();
  gather_parameters();
  gradients_loaded_ = false;
}

void ZeroOptimizer::gather_parameters() {
  Communicator& comm = ddp_.communicator();
  int rank = comm.rank();
  std::vector<Work> works;
  for (Shard& s : shards_) {
    if (s.layout.shard == 0) continue;  // an empty bucket, on every rank alike
    float* gathered = s.gathered.data_ptr<float>();
    std::copy_n(s.master.data_ptr<float>(), s.master.numel(), gathered + s.layout.begin);  // the padding stays 0
    // In place: this rank's contribution already sits at rank x shard.
    works.push_back(iallgather(comm, gathered + rank * s.layout.shard, gathered, s.layout.shard, DType::kF32));
  }
  // Every allgather must be over before its buffer is read or freed, also when one failed.
  std::exception_ptr failure;
  for (Work& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  ::torch::NoGradGuard no_grad;
  const engine::BucketPlan& plan = ddp_.grad_sync().plan();
  const std::vector<::torch::Tensor>& params = ddp_.parameters();
  for (std::size_t b = 0; b < shards_.size(); ++b) {
    const engine::Bucket& bucket = plan.buckets[b];
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      const ::torch::Tensor& p = params[static_cast<std::size_t>(bucket.params[slot])];
      flat(p).copy_(shards_[b].gathered.slice(0, bucket.offsets[slot], bucket.offsets[slot] + p.numel()));
    }
  }
}

void ZeroOptimizer::zero_grad() { ddp_.zero_grad(); }

double ZeroOptimizer::clip_grad_norm(double max_norm) {
  load_gradients();
  double squares = 0;
  for (const Shard& s : shards_) {
    if (s.master.numel() > 0) squares += s.master.grad().to(::torch::kFloat64).square().sum().item<double>();
  }
  allreduce(ddp_.communicator(), &squares, &squares, 1, DType::kF64, ReduceOp::kSum);
  double norm = std::sqrt(squares);
  if (!std::isfinite(norm)) return norm;
  double scale = max_norm / (norm + 1e-6);
  if (scale < 1) {
    ::torch::NoGradGuard no_grad;
    for (Shard& s : shards_) s.master.mutable_grad().mul_(scale);
  }
  return norm;
}

ModelStateBytes ZeroOptimizer::model_state_bytes() {
  ModelStateBytes bytes = torch::model_state_bytes(ddp_.parameters(), inner_.get());
  for (const Shard& s : shards_) bytes.master += tensor_bytes(s.master) + tensor_bytes(s.master.grad());
  return bytes;
}

std::int64_t ZeroOptimizer::communication_buffer_bytes() const {
  std::int64_t total = 0;
  for (const Shard& s : shards_) total += tensor_bytes(s.gathered);
  return total;
}

}  // namespace braid::torch
