// braid::torch::ZeroOptimizer: ZeRO stages 1 and 2 for LibTorch models (Rajbhandari et al.,
// "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", 2020), over a
// DistributedDataParallel whose GradSync reduce-scatters the gradients (DdpOptions::zero_stage
// 1 or 2; docs/zero.md).
//
//   braid::torch::DistributedDataParallel ddp(comm, model, {.zero_stage = 1});
//   braid::torch::ZeroOptimizer opt(ddp, [](std::vector<torch::Tensor> shards) {
//     return std::make_unique<torch::optim::Adam>(std::move(shards), torch::optim::AdamOptions(1e-3));
//   });
//   for (...) {
//     opt.zero_grad();
//     loss_fn(model->forward(x), y).backward();
//     ddp.synchronize();          // this rank's averaged gradient shards are now in GradSync
//     opt.clip_grad_norm(1.0);    // optional: the global norm, over every rank's shards
//     opt.step();                 // steps this rank's shards, allgathers the parameters
//   }
//
// Per bucket of the GradSync plan (padded to n x shard elements, rank r owning [r x shard,
// (r+1) x shard), engine/grad_sync.h BucketShard) it holds this rank's fp32 master shard: a
// flat copy of the parameter elements it owns (the real ones, [begin, end)). The inner
// optimizer, made by the factory, steps those shards, so its state is 1/n of what it would be
// over the whole model. That is exact for any optimizer whose update is elementwise (SGD with
// momentum, Adam, AdamW, ...: each element's new value depends on that element's parameter,
// gradient and state only), so stepping a flat shard equals stepping the parameters; it is NOT
// for one that mixes elements (LBFGS, per-tensor norms such as LAMB's), which must not be used.
// Parameter groups are not supported: one group over every shard (its options are the factory's).
//
// step(): each shard's gradient := GradSync's averaged shard (its real part), the inner step,
// then every bucket's updated shard is allgathered (all buckets in flight, then one wait) into
// a padded bucket buffer, from which each parameter copies its elements back (the plan's
// offsets). Every rank ends with identical parameters.
//
// Checkpoints: state()/load_state() of the sharded optimizer are not implemented yet; sharded
// checkpoints (each rank saving its shards, resharding n -> m with engine/shard_layout.h) are
// the next step. Construct the ZeroOptimizer after any parameters are loaded: the master
// shards are copied from the parameters at construction.
//
// Thread-safety: one thread (the training loop). Collective: every rank of the DDP's
// communicator constructs it, and calls step() and clip_grad_norm() at the same points.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/model_state_bytes.h"

namespace braid::torch {

using OptimizerFactory = std::function<std::unique_ptr<::torch::optim::Optimizer>(std::vector<::torch::Tensor>)>;

class ZeroOptimizer {
 public:
  // Builds the bucket plan now (GradSync::plan_buckets) and copies the master shards. Throws
  // InvalidArgument when the DDP's zero_stage is not 1 or 2 or the factory returns null.
  ZeroOptimizer(DistributedDataParallel& ddp, const OptimizerFactory& make_inner);
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  // REQUIRES: ddp.synchronize() of this step has returned. Collective.
  void step();
  // The model's gradients (DistributedDataParallel::zero_grad).
  void zero_grad();
  // Scales this step's shard gradients by max_norm / (norm + 1e-6) when the global 2-norm of
  // the averaged gradient exceeds max_norm (torch.nn.utils.clip_grad_norm_'s rule) and returns
  // the norm before clipping. Each element is counted once: every rank sums the squares of its
  // real shard elements (in double), and the sums are allreduced. A non-finite norm is returned
  // and nothing is scaled. REQUIRES: as step(), before it. Collective.
  double clip_grad_norm(double max_norm);

  // This rank's parameters + gradients (the model's, whole) + master shards and their gradients
  // + the inner optimizer's state, in bytes (model_state_bytes.h). The allgather's bucket
  // buffers (communication staging, like GradSync's) are in communication_buffer_bytes().
  ModelStateBytes model_state_bytes();
  std::int64_t communication_buffer_bytes() const;

  ::torch::optim::Optimizer& inner() { return *inner_; }
  // The master shard of bucket b (this rank's real elements, flat).
  const ::torch::Tensor& master_shard(int bucket) const { return shards_.at(static_cast<std::size_t>(bucket)).master; }
  int stage() const { return ddp_.options().zero_stage; }

 private:
  struct Shard {
    BucketShard layout;
    ::torch::Tensor master;    // [end - begin] fp32, its .grad() the averaged gradient
    ::torch::Tensor gathered;  // [padded] fp32: every rank's shard after the allgather
  };

  void load_gradients();  // once per step: GradSync's shards into the masters' gradients
  void gather_parameters();

  DistributedDataParallel& ddp_;
  std::vector<Shard> shards_;  // per bucket of the plan
  std::unique_ptr<::torch::optim::Optimizer> inner_;
  bool gradients_loaded_ = false;
};

}  // namespace braid::torch
