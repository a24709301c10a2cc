// braid::torch::DistributedDataParallel: PyTorch's DDP for LibTorch models, on braid's GradSync.
//
//   auto model = std::make_shared<Net>();
//   braid::torch::DistributedDataParallel ddp(comm, model, {.bucket_cap = "25"});
//   torch::optim::SGD opt(model->parameters(), 0.1);
//   for (...) {
//     ddp.zero_grad();
//     loss_fn(model->forward(x), y).backward();   // buckets start their allreduce during backward
//     ddp.synchronize();                          // gradients are now averaged on every rank
//     opt.step();
//   }
//
// Construction (collective: every rank constructs its wrapper at the same point):
//   1. checks every rank registered the same parameters and buffers, by name, dtype and shape
//      (model_agreement.h: InvalidArgument naming the first difference, on every rank);
//   2. broadcasts parameters and buffers from rank 0, so every replica starts identical;
//   3. gives every parameter a gradient tensor up front and registers it with GradSync, and
//      hooks each parameter's gradient accumulator (the autograd node that adds into .grad):
//      the hook fires when the gradient is final for this backward, and marks it ready, so a
//      full bucket's allreduce starts while backward goes on with earlier layers.
//
// The gradient tensors must stay where they are (stages 0 and 1): zero_grad() here, or the optimizer's
// zero_grad() (LibTorch 1.13 zeroes in place), never `p.mutable_grad() = ...` or reset().
// synchronize() checks and refuses a moved gradient rather than average stale memory.
//
// With overlap off no hooks are registered and synchronize() marks every gradient ready after
// backward: one allreduce burst after compute, the baseline overlap is measured against.
// no_sync() accumulates gradients locally (gradient accumulation), as in PyTorch.
// Buffers (e.g. BatchNorm running statistics) are broadcast from rank 0 at the end of every
// synchronize() when broadcast_buffers is on, so every replica evaluates with rank 0's.
//
// ZeRO stages 1 and 2 (zero_stage > 0, docs/zero.md): GradSync reduce-scatters each bucket
// instead of allreducing it, and synchronize() leaves the gradients as they are (this rank's
// local, unaveraged sums): the averaged gradient exists only as this rank's shards, in
// GradSync (shard_gradient). Step with a ZeroOptimizer (zero_optimizer.h), never with a plain
// torch optimizer over the parameters. Stage 1 reduce-scatters every bucket in synchronize();
// stage 2 as each bucket becomes ready during backward (with overlap on). Buckets are never
// rebuilt (the optimizer's shards are laid out on the first plan); the policy's compression is
// refused, the reduce-scatter is compressed by zero_codec instead (ZeRO++ qgZ).
// Stage 2 also releases the full gradients (ZeRO-2's memory saving): no .grad is allocated up
// front, autograd allocates each one in backward, the hook hands it to GradSync with
// mark_ready(id, data), and once GradSync has copied a bucket into its send buffer
// (GradSyncOptions::on_gradients_copied, during backward) that bucket's .grad tensors are
// reset; zero_grad() resets (set_to_none) rather than zeroes. So after synchronize() no full
// gradient is left, only this rank's averaged shards, and during backward only the buckets not
// yet launched hold theirs (peak_gradient_bytes()). Under no_sync the gradients accumulate in
// .grad as usual and are released at the synchronising backward: then, as in FSDP's no_sync,
// the full gradient does exist between the micro-batches (the price of results equal to DDP's
// accumulation; reduce-scattering every micro-batch instead, as DeepSpeed does, would cost a
// reduce-scatter per micro-batch and add the shards in another order).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/compress/compression_policy.h"
#include "braid/engine/grad_sync.h"

namespace braid::torch {

struct DdpOptions {
  std::string bucket_cap = "25";        // MiB per bucket, or "auto" (engine/bucket_plan.h)
  compress::CompressionPolicy policy;   // default: no compression
  bool overlap = true;                  // start bucket allreduces from autograd hooks
  bool allow_unused = false;            // a parameter without a gradient counts as zero
  bool broadcast_buffers = true;        // rank 0's buffers to every rank after each step
  // Buckets in registered memory where every rank is on one host (the zero-copy allreduce);
  // false: ordinary memory (single copy or staged). GradSyncOptions::registered_buckets.
  bool registered_buckets = true;
  // Each .grad is a view of its place in its bucket (PyTorch's gradient_as_bucket_view;
  // GradSyncOptions::gradients_in_buckets): backward accumulates straight into the buckets and
  // their allreduce averages the gradients where they are, with no copy in or out. The views
  // move when the buckets are rebuilt (after the first synchronize(), or on a restore): take
  // .grad afresh after those, never keep one across them. When the wrapper goes, every .grad
  // is given memory of its own again. zero_stage 0 only (InvalidArgument otherwise).
  bool gradient_as_bucket_view = false;
  trace::TraceRecorder* trace = nullptr;  // records every bucket's allreduce
  // 0: DDP (allreduce). 1 or 2: ZeRO's gradient side (see the file comment); requires the
  // default policy (no compression): InvalidArgument from GradSync otherwise.
  int zero_stage = 0;
  // ZeRO++ qgZ: GradSyncOptions::zero_codec and zero_error_feedback (engine/grad_sync.h).
  compress::CodecSpec zero_codec;
  bool zero_error_feedback = false;
};

class DistributedDataParallel {
 public:
  // Throws InvalidArgument when the models differ across ranks or a parameter is not a dense
  // float32 CPU tensor.
  DistributedDataParallel(Communicator& comm, std::shared_ptr<::torch::nn::Module> module, DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  ::torch::nn::Module& module() { return *module_; }

  // Zeroes every gradient in place (keeps the buffers GradSync reads).
  void zero_grad();
  // The synchronisation point before the optimizer step: waits for every bucket, writes the
  // averages into the gradients, broadcasts buffers. Rethrows any communication error.
  GradSyncStats synchronize();
  // Gradient accumulation: inside the returned scope, backward only accumulates locally.
  [[nodiscard]] NoSync no_sync() { return NoSync(*sync_); }
  // Rank 0's buffers to every rank (done by synchronize() when broadcast_buffers is on).
  void broadcast_buffers();

  GradSync& grad_sync() { return *sync_; }
  const GradSync& grad_sync() const { return *sync_; }
  Communicator& communicator() { return comm_; }
  const DdpOptions& options() const { return options_; }
  // The parameters GradSync averages (those requiring gradients), in registration order: the
  // index of a parameter here is its GradSync id.
  const std::vector<::torch::Tensor>& parameters() const { return params_; }
  // Their names (the module's named_parameters keys), by the same index.
  const std::vector<std::string>& parameter_names() const { return names_; }
  std::int64_t parameter_count() const;
  // After the parameters' data changed dtype (set_data: a ZeroOptimizer storing them in bf16),
  // autograd has dropped their gradient accumulators, and with them the ready hooks: hooks the
  // new ones. Call once, before the next backward.
  void rehook_accumulators();
  // ZeRO-2 (zero_stage 2): the gradients are released bucket by bucket as GradSync copies them
  // (see the file comment); the most gradient bytes alive at once during a backward, over the
  // wrapper's life. 0 for the other stages (their .grad tensors live for good).
  bool releases_gradients() const { return options_.zero_stage == 2; }
  std::int64_t peak_gradient_bytes() const {
    std::lock_guard<std::mutex> lock(live_mu_);
    return peak_gradient_bytes_;
  }

 private:
  void broadcast_from_rank0(const std::vector<::torch::Tensor>& tensors);
  void register_gradients();
  void check_gradients_in_place() const;
  void mark_ready(int id);
  void hook_accumulator(int id);
  void release_gradients(int bucket);
  void view_gradient(int param, float* where);

  Communicator& comm_;
  std::shared_ptr<::torch::nn::Module> module_;
  DdpOptions options_;
  std::vector<std::string> names_;
  std::vector<::torch::Tensor> params_;
  std::vector<void*> grad_data_;  // where each gradient lived when registered
  // The hooked accumulators (kept alive: a variable holds its accumulator weakly) and the keys
  // of our hooks on them, removed when the wrapper goes.
  std::vector<std::pair<std::shared_ptr<::torch::autograd::Node>, std::uintptr_t>> hooks_;
  std::unique_ptr<GradSync> sync_;
  mutable std::mutex live_mu_;  // autograd's hooks may run on several threads
  std::vector<char> live_;  // ZeRO-2: per parameter, whether its .grad is counted as alive
  std::int64_t live_gradient_bytes_ = 0, peak_gradient_bytes_ = 0;
};

}  // namespace braid::torch
