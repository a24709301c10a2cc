#include "braid/torch/zero_optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"
#include "braid/torch/mixed_precision.h"
#include "braid/compress/quantized_allgather.h"

namespace braid::torch {
namespace {

// Copies bucket `bucket`'s parameters into `flat` (at the plan's offsets).
void copy_into(const ::torch::Tensor& flat, const engine::Bucket& bucket, const std::vector<::torch::Tensor>& params) {
  for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
    const ::torch::Tensor& p = params[static_cast<std::size_t>(bucket.params[slot])];
    flat.narrow(0, bucket.offsets[slot], p.numel()).copy_(p.detach().reshape({-1}));
  }
}

// Points each parameter's data at its view of `flat` (which may change its dtype). set_data
// keeps the parameter object (its autograd meta: the .grad tensor GradSync reads, the
// accumulator DDP hooks), so only the values move.
void point_into(const ::torch::Tensor& flat, const engine::Bucket& bucket, const std::vector<::torch::Tensor>& params) {
  for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
    const ::torch::Tensor& p = params[static_cast<std::size_t>(bucket.params[slot])];
    p.set_data(flat.narrow(0, bucket.offsets[slot], p.numel()).view(p.sizes()));
  }
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(DistributedDataParallel& ddp, const OptimizerFactory& make_inner, ZeroOptions zero)
    : ddp_(ddp), zero_(zero) {
  ErrorContext context{.rank = ddp_.communicator().rank(), .op = "ZeroOptimizer"};
  int zero_stage = ddp_.options().zero_stage;
  if (zero_stage != 1 && zero_stage != 2) {
    throw InvalidArgument(context, fmt::format("the DistributedDataParallel has zero_stage {}: ZeroOptimizer steps the "
                                               "gradient shards of stage 1 or 2 (DdpOptions::zero_stage)",
                                               zero_stage));
  }
  check_options();
  GradSync& sync = ddp_.grad_sync();
  sync.plan_buckets();
  std::vector<::torch::Tensor> owned;
  ::torch::NoGradGuard no_grad;
  for (int b = 0; b < static_cast<int>(sync.plan().buckets.size()); ++b) {
    Shard s{.layout = sync.bucket_shard(b)};
    const engine::Bucket& bucket = sync.plan().buckets[static_cast<std::size_t>(b)];
    // Flattened in fp32 first: the master shard is cut from the exact values, and only then is
    // the compute copy rounded to 16 bits.
    s.flat = ::torch::zeros({s.layout.padded}, ::torch::kFloat32);
    copy_into(s.flat, bucket, ddp_.parameters());
    s.owned = owned_shard(s, b);
    if (sixteen_bit()) s.flat = s.flat.to(zero_.parameter_dtype);
    point_into(s.flat, bucket, ddp_.parameters());
    owned.push_back(s.owned);
    shards_.push_back(std::move(s));
  }
  if (sixteen_bit()) ddp_.rehook_accumulators();  // set_data to another dtype dropped the accumulators
  inner_ = make_inner(std::move(owned));
  if (!inner_) throw InvalidArgument(context, "the optimizer factory returned no optimizer");
}

void ZeroOptimizer::check_options() const {
  ErrorContext context{.rank = ddp_.communicator().rank(), .op = "ZeroOptimizer"};
  if (zero_.parameter_dtype == ::torch::kFloat32) return;
  if (zero_.parameter_dtype != ::torch::kBFloat16) {
    throw InvalidArgument(context, fmt::format("parameter_dtype {}: the flat parameters are stored in float32 or "
                                               "bfloat16 (LibTorch 1.13 has no fp16 CPU matmul to compute with "
                                               "fp16 parameters)",
                                               ::c10::toString(zero_.parameter_dtype)));
  }
  if (zero_.quantize_weights) {
    throw InvalidArgument(context, "parameter_dtype bfloat16 with quantize_weights: the 16-bit parameters are "
                                   "allgathered in bf16, qwZ would gather them in int8; choose one");
  }
}

// The inner optimizer's parameter for a bucket: a leaf of its own (detach()) sharing the
// storage it steps, so the inner step writes in place: flat's [begin, end) (the model's
// parameters), or with qwZ the real part of the exact master shard.
::torch::Tensor ZeroOptimizer::owned_shard(Shard& s, int bucket) const {
  ErrorContext context{.rank = ddp_.communicator().rank(), .op = "ZeroOptimizer"};
  std::int64_t first = ddp_.communicator().rank() * s.layout.shard;
  std::int64_t real = s.layout.end - s.layout.begin;
  ::torch::Tensor base = s.flat;
  std::int64_t begin = s.layout.begin;
  if (keeps_master()) {
    s.master = s.flat.narrow(0, first, s.layout.shard).clone();  // the exact values, padding 0
    base = s.master;
    begin = real == 0 ? 0 : begin - first;  // an all-padding shard's begin lies before `first`
  }
  ::torch::Tensor owned = base.narrow(0, begin, real).detach();
  BRAID_CHECK(owned.data_ptr<float>() == base.data_ptr<float>() + begin, Mismatch, context,
              "bucket {}: the shard is not a view of the {}", bucket, keeps_master() ? "master shard" : "flat parameters");
  owned.set_requires_grad(true);
  return owned;
}

void ZeroOptimizer::load_gradients() {
  if (gradients_loaded_) return;
  GradSync& sync = ddp_.grad_sync();
  int rank = ddp_.communicator().rank();
  for (std::size_t b = 0; b < shards_.size(); ++b) {
    Shard& s = shards_[b];
    std::int64_t real = s.layout.end - s.layout.begin;
    if (real == 0) continue;  // an all-padding shard: no gradient, the optimizer skips it
    std::span<const float> averaged = sync.shard_gradient(static_cast<int>(b));
    // Element i of the shard is bucket element rank x shard + i; the real part starts at begin.
    std::int64_t skip = s.layout.begin - rank * s.layout.shard;
    BRAID_CHECK(skip >= 0 && skip + real <= static_cast<std::int64_t>(averaged.size()), Mismatch,
                {.rank = rank, .op = "ZeroOptimizer::step"},
                "bucket {}: shard [{}, {}) outside the {} gradient floats of rank {}", b, s.layout.begin,
                s.layout.end, averaged.size(), rank);
    // The gradient is GradSync's receive buffer itself, re-viewed every step (so it follows the
    // engine's buffer wherever it is). GradSync hands it out read-only because it does not read
    // it back; the memory is its own non-const vector, and the only writer here is
    // clip_grad_norm's scaling, before the next launch overwrites it.
    s.owned.mutable_grad() = ::torch::from_blob(const_cast<float*>(averaged.data() + skip), {real}, ::torch::kFloat32);
  }
  gradients_loaded_ = true;
}

bool ZeroOptimizer::unscale_gradients(double scale, Communicator* group) {
  load_gradients();
  std::vector<::torch::Tensor> shards;
  for (const Shard& s : shards_) shards.push_back(s.owned.grad());
  return torch::unscale_gradients(shards, scale, group ? *group : ddp_.communicator());
}

void ZeroOptimizer::step() {
  load_gradients();
  inner_->step();
  gather_parameters();
  gradients_loaded_ = false;
}

// One allgather per bucket, all in flight. Plain: in place on the parameters (this rank's
// updated shard already sits at rank x shard). qwZ: from the master shard, int8 on the wire;
// every rank, this one included, dequantises every shard into the flat parameters. 16-bit
// parameters: the master shard rounded into this rank's slot, then in place in bf16.
std::vector<Work> ZeroOptimizer::start_gathers() {
  Communicator& comm = ddp_.communicator();
  int rank = comm.rank();
  std::vector<Work> works;
  ::torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < shards_.size(); ++b) {
    Shard& s = shards_[b];
    if (s.layout.shard == 0) continue;  // an empty bucket, on every rank alike
    if (sixteen_bit()) {
      ::torch::Tensor slot = s.flat.narrow(0, rank * s.layout.shard, s.layout.shard);
      slot.copy_(s.master);
      works.push_back(iallgather(comm, slot.data_ptr(), s.flat.data_ptr(), s.layout.shard, DType::kBF16));
      continue;
    }
    float* flat = s.flat.data_ptr<float>();
    if (zero_.quantize_weights) {
      works.push_back(compress::iquantized_allgather(comm, s.master.data_ptr<float>(), s.layout.shard, flat,
                                                     {.codec = zero_.weight_codec, .block = zero_.weight_block, .name = fmt::format("bucket {}", b)}));
    } else {
      works.push_back(iallgather(comm, flat + rank * s.layout.shard, flat, s.layout.shard, DType::kF32));
    }
  }
  return works;
}

void ZeroOptimizer::gather_parameters() {
  std::vector<Work> works = start_gathers();
  // Every allgather must be over before the parameters are read, also when one failed.
  std::exception_ptr failure;
  for (Work& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

std::uint64_t ZeroOptimizer::gather_wire_bytes() const {
  const auto peers = static_cast<std::uint64_t>(ddp_.communicator().size() - 1);
  if (sixteen_bit()) return fp32_gather_wire_bytes() / sizeof(float) * 2;  // (n-1) x shard x 2 per bucket
  if (!zero_.quantize_weights) return fp32_gather_wire_bytes();
  std::uint64_t bytes = 0;
  for (const Shard& s : shards_) {
    if (s.layout.shard > 0) bytes += peers * compress::quantized_allgather_payload_bytes(s.layout.shard, zero_.weight_block, zero_.weight_codec);
  }
  return bytes;
}

std::uint64_t ZeroOptimizer::fp32_gather_wire_bytes() const {
  std::uint64_t bytes = 0;
  const auto peers = static_cast<std::uint64_t>(ddp_.communicator().size() - 1);
  for (const Shard& s : shards_) bytes += peers * static_cast<std::uint64_t>(s.layout.shard) * sizeof(float);
  return bytes;
}

void ZeroOptimizer::zero_grad() { ddp_.zero_grad(); }

double ZeroOptimizer::shard_gradient_squares(const GradientNormScope& scope) const {
  auto squares = [](const ::torch::Tensor& g) { return g.to(::torch::kFloat64).square().sum().item<double>(); };
  const engine::BucketPlan& plan = ddp_.grad_sync().plan();
  double sum = 0;
  for (std::size_t b = 0; b < shards_.size(); ++b) {
    const Shard& s = shards_[b];
    if (!s.owned.grad().defined()) continue;
    if (!scope.counted) {
      sum += squares(s.owned.grad());
      continue;
    }
    // The part of each counted parameter that falls inside this rank's [begin, end).
    const engine::Bucket& bucket = plan.buckets[b];
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      const ::torch::Tensor& p = ddp_.parameters()[static_cast<std::size_t>(bucket.params[slot])];
      std::int64_t first = std::max(bucket.offsets[slot], s.layout.begin);
      std::int64_t last = std::min(bucket.offsets[slot] + p.numel(), s.layout.end);
      if (first < last && scope.counted(p)) sum += squares(s.owned.grad().narrow(0, first - s.layout.begin, last - first));
    }
  }
  return sum;
}

double ZeroOptimizer::clip_grad_norm(double max_norm, const GradientNormScope& scope) {
  load_gradients();
  double squares = shard_gradient_squares(scope);
  allreduce(scope.sum_over ? *scope.sum_over : ddp_.communicator(), &squares, &squares, 1, DType::kF64, ReduceOp::kSum);
  double norm = std::sqrt(squares);
  if (!std::isfinite(norm)) return norm;
  double scale = max_norm / (norm + 1e-6);
  if (scale < 1) {
    ::torch::NoGradGuard no_grad;
    for (Shard& s : shards_) {
      if (s.owned.grad().defined()) s.owned.mutable_grad().mul_(scale);
    }
  }
  return norm;
}

ModelStateBytes ZeroOptimizer::model_state_bytes() {
  ModelStateBytes bytes = torch::model_state_bytes(ddp_.parameters(), inner_.get());
  bytes.parameters = 0;  // the flat tensors, padding included
  for (const Shard& s : shards_) {
    bytes.parameters += tensor_bytes(s.flat);
    if (s.master.defined()) bytes.master += tensor_bytes(s.master);
  }
  // Stage 2 keeps no full gradient (the DDP releases each bucket's once GradSync has copied it):
  // this rank's gradient state is its averaged shards, GradSync's receive buffers (padding
  // included). Stage 1 keeps the whole .grad tensors, counted above; its shards are transient.
  if (stage() == 2) bytes.gradients += static_cast<std::int64_t>(ddp_.grad_sync().shard_buffer_bytes());
  return bytes;
}

}  // namespace braid::torch
