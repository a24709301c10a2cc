// GradSync: averages a model's gradients across the ranks of a communicator while backward is
// still running (PyTorch DDP's reducer, framework-agnostic: it sees flat fp32 buffers).
//
//   braid::GradSync sync(comm, {.bucket_cap = "25", .policy = policy});
//   for (auto& p : model) sync.add_param(p.name, p.grad, p.count, braid::DType::kF32, p.shape);
//   // each step, from the backward hooks, as each gradient becomes final:
//   sync.mark_ready(id);
//   GradSyncStats s = sync.finish();   // before the optimizer step: gradients are averaged
//
// Buckets (engine/bucket_plan.h) pack gradients in the order they are expected to become
// ready: reverse registration order at first (backward runs back to front), then — after the
// first step — the order rank 0 observed, broadcast so that every rank builds identical
// buckets. When the last gradient of a bucket is marked, its gradients are copied into the
// bucket's buffer and its allreduce (compressed as the CompressionPolicy says) is queued on the
// communicator's background thread (collectives/collective_queue.h) at once, while the caller
// goes on computing. Buckets are launched strictly in index order (a complete bucket waits for
// the ones before it), so every rank issues the same collectives in the same order whatever
// order its gradients became ready in (readiness_tracker.h).
//
// finish() launches what is left, waits, copies the averages back into the gradients and
// reports the step. A parameter that never became ready is, by default, an error on every rank
// (InvalidArgument naming it on the rank that missed it, and naming that rank on the others;
// the ranks agree through one small allgather per step, so nobody waits for a bucket that will
// never come and the communicator stays usable); with allow_unused it counts as zero.
// Accumulation: between set_sync(false) and set_sync(true) (or inside a NoSync scope)
// mark_ready and finish do nothing, so gradients accumulate locally and are averaged at the
// first synchronised finish().
//
// ZeRO stages 1 and 2, gradient side (issue 19, docs/zero.md "Stages 1 and 2: GradSync"): with
// zero_stage > 0 every bucket is reduce-scattered instead of allreduced. Its buffer is laid out
// by engine/shard_layout.h (one flat buffer per bucket, the parameters at the bucket plan's
// offsets, padded at the tail to size() equal shards) and this rank receives only its shard,
// read with shard_gradient(); the registered gradient buffers are not written back (they keep
// this rank's local, unaveraged gradients). The optimizer side (LibTorch's ZeRO optimizer)
// steps its own shard and allgathers the parameters; GradSync does neither. With zero_codec
// (ZeRO++ qgZ) the reduce-scatter moves int8 (compress/compressed_reduce_scatter.h).
//
// Thread-safety: add_param, finish, set_sync, plan_buckets, bucket_shard, shard_gradient from
// one thread (the training loop); mark_ready may be called from any thread (autograd's hooks),
// concurrently. The buffers registered must
// stay valid and unmodified between mark_ready and finish.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/base/mutex.h"
#include "braid/comm/communicator.h"
#include "braid/comm/work.h"
#include "braid/compress/compressed_allreduce.h"
#include "braid/compress/compression_policy.h"
#include "braid/engine/bucket_plan.h"
#include "braid/engine/send_buffer_pool.h"
#include "braid/engine/shard_layout.h"

namespace braid {

namespace engine {
class ReadinessTracker;  // readiness_tracker.h (internal)
}

namespace trace {
class TraceRecorder;
}

struct GradSyncOptions {
  std::string bucket_cap = "25";  // MiB per bucket ("25", "4", "1"), or "auto" (bucket_plan.h)
  compress::CompressionPolicy policy;  // default: no compression
  bool allow_unused = false;      // a parameter without a gradient counts as zero
  bool rebuild_buckets = true;    // after the first step, in the order rank 0 observed
  bool average = true;            // divide by the world size (false: sum)
  // Records every bucket's allreduce. Unset: GradSync keeps its own recorder when BRAID_TRACE
  // names a directory (comm events and step boundaries; the file is written when GradSync is
  // destroyed), and records nothing otherwise.
  trace::TraceRecorder* trace = nullptr;
  // ZeRO's gradient side (docs/zero.md). 0: allreduce every bucket (DDP). 1 or 2: each bucket is
  // reduce-scattered and averaged instead; this rank keeps only its shard of it (shard_gradient),
  // and the registered gradient buffers are not written back. Stage 1 launches every bucket in
  // finish(), after backward; stage 2 launches each as it becomes ready during backward.
  // Requires no compression and rebuild_buckets = false (InvalidArgument otherwise: the
  // optimizer's shards are laid out on the first plan and must not move).
  //
  // Memory per bucket of E elements on n ranks, S = ceil(E / n) (shard_layout.h): one S-float
  // shard buffer that receives the result, for the plan's lifetime, and a padded send buffer of
  // n x S floats into which the gradients are copied at launch. Stage 1 keeps a send buffer per
  // bucket; stage 2's buckets in flight share a ring of zero_send_buffers bucket caps
  // (send_buffer_pool.h), so its staging memory is bounded by the bucket cap, not the model.
  // With stage 2 the caller may also hand each step's gradient over at mark_ready(param, grad)
  // and release it once on_gradients_copied says it was copied: then the full gradient never
  // exists at once, only this rank's shards do (ZeRO-2; docs/zero.md).
  int zero_stage = 0;
  // Stage 2: the send buffers of the buckets in flight share one ring of this many bucket caps
  // (at least the largest padded bucket; at most all buckets); a launch that does not fit waits
  // for the oldest reduce-scatters (send_buffer_pool.h). >= 1.
  int zero_send_buffers = 2;
  // Called once per bucket and synchronised step, on the launching thread and under GradSync's
  // lock, right after the bucket's gradients were copied into its send buffer and before its
  // collective is queued: from then on GradSync never reads those gradients again this step, so
  // the caller may release them (ZeRO-2's adapter resets the .grad tensors here). Must not call
  // into GradSync.
  std::function<void(int bucket)> on_gradients_copied;
  // Bucket buffers in registered memory (alloc_registered), so that their allreduce on one
  // host reads the peers' buckets in place (docs/registered-memory.md); under ZeRO the send
  // buffers (stage 1's per bucket, stage 2's ring), which its reduce-scatter then reads in
  // place. Taken only where the communicator has a shared-memory workspace (every rank on one
  // host, over shm). false: ordinary memory, for the A/B.
  bool registered_buckets = true;
  // ZeRO++ qgZ (docs/zero.md "ZeRO++"): with zero_stage 1 or 2, the codec of every bucket's
  // reduce-scatter (compress/compressed_reduce_scatter.h: an all-to-all of encoded shards, the
  // first stage of the two-stage compressed allreduce, each shard's n contributions decoded and
  // summed in rank order). none (default): fp32 reduce_scatter. int8 ("int8" or "int8:B") is
  // ZeRO++'s; fp16, bf16 and sign are accepted too. InvalidArgument with zero_stage 0 (DDP
  // compresses through `policy`) or for another codec.
  compress::CodecSpec zero_codec;
  // Error feedback for zero_codec (a full-size fp32 residual per bucket, kept in
  // compression_state()): off by default, as in DeepSpeed's qgZ; docs/zero.md measures both.
  bool zero_error_feedback = false;
  // The gradients live in the bucket buffers (PyTorch's gradient_as_bucket_view): whenever a
  // plan is adopted (plan_buckets, the rebuild after the first step, restore), GradSync moves
  // every registered gradient into its place in its bucket, copying its current values, and
  // calls on_gradients_moved(param, where) for each, from then on reading and writing the
  // gradient there. A bucket's allreduce then runs on the gradients themselves: no copy into
  // the bucket at launch, none back at finish. The caller must make its gradients point there
  // (the LibTorch adapter makes each .grad a view of `where`) and must not use the old memory;
  // `where` is valid until the next move or GradSync's end. Requires zero_stage 0
  // (InvalidArgument otherwise) and on_gradients_moved.
  bool gradients_in_buckets = false;
  std::function<void(int param, float* where)> on_gradients_moved;
};

// Which elements of bucket b this rank owns under ZeRO: the bucket is padded to size() x shard
// elements and rank r owns [r x shard, (r+1) x shard) of it, of which [begin, end) are real
// (bucket element coordinates; empty when the rank's whole shard is padding).
struct BucketShard {
  std::int64_t shard = 0;            // elements per rank, padding included
  std::int64_t begin = 0, end = 0;   // this rank's real elements
  std::int64_t padded = 0;           // size() x shard
  bool operator==(const BucketShard&) const = default;
};

namespace engine {
// ZeRO's view of a bucket plan (shard_layout.h): bucket b is group b, its parameters in bucket
// order, 4-byte elements aligned to 4 bytes, so flat buffer b holds bucket b's parameters at
// exactly the plan's offsets and buffers[b].shard_pieces says which parameter elements every
// rank's gradient shard holds (what the optimizer maps its state onto). The layout's parameter
// j is the j-th parameter of the plan in bucket order, not parameter id j: name it through
// params[j].name, or map back through plan.buckets. Pure; InvalidArgument for world_size < 1.
ShardLayout bucket_shard_layout(const BucketPlan& plan, int world_size);
// The shard of `rank` in a bucket of `elements` floats over `world_size` ranks: shard =
// ceil(elements / world_size) (the layout's S with alignment 4 for floats), padded = world_size x
// shard. Pure; InvalidArgument for world_size < 1, rank outside [0, world_size) or a negative count.
BucketShard bucket_shard(std::int64_t elements, int world_size, int rank);
// The same from flat buffer `buffer` of a layout (the one GradSync uses).
BucketShard bucket_shard(const FlatBuffer& buffer, int rank);
}  // namespace engine

// What a training checkpoint needs to resume GradSync exactly where it stopped: the step (the
// compression policy's warm-up and schedule count it), the bucket order in force (rebuilt from
// rank 0's order after the first step; a resumed run must pack the same buckets, which key the
// residuals) and this rank's error-feedback state.
struct GradSyncSnapshot {
  std::int64_t step = 0;
  std::vector<int> bucket_order;            // parameters in bucket order; empty before planning
  std::vector<std::byte> compression_state; // CompressionState::serialize()
  // GradSyncOptions::zero_stage; restore() requires equal (a caller rebuilding a snapshot from
  // a checkpoint file must set it: the default 0 is DDP's).
  int zero_stage = 0;
  // ZeRO++ qgZ (docs/zero.md "ZeRO++"): with zero_stage 1 or 2, the codec of every bucket's
  // reduce-scatter (compress/compressed_reduce_scatter.h: an all-to-all of encoded shards, the
  // first stage of the two-stage compressed allreduce, each shard's n contributions decoded and
  // summed in rank order). none (default): fp32 reduce_scatter. int8 ("int8" or "int8:B") is
  // ZeRO++'s; fp16, bf16 and sign are accepted too. InvalidArgument with zero_stage 0 (DDP
  // compresses through `policy`) or for another codec.
  compress::CodecSpec zero_codec;
  // Error feedback for zero_codec (a full-size fp32 residual per bucket, kept in
  // compression_state()): off by default, as in DeepSpeed's qgZ; docs/zero.md measures both.
  bool zero_error_feedback = false;
};

// One synchronised step.
struct GradSyncStats {
  std::int64_t step = 0;
  int buckets = 0;
  compress::CompressionStats wire;  // summed over buckets
  double communication_seconds = 0; // sum of the buckets' allreduce durations (background thread)
  double exposed_seconds = 0;       // time finish() waited for them: communication not hidden
  double overlap_ratio() const;     // 1 - exposed / communication (0 when nothing was sent)
};

class GradSync {
 public:
  GradSync(Communicator& comm, GradSyncOptions options = {});
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Registers a parameter's gradient buffer, in model order; returns its id (0, 1, ...).
  // Only f32 is supported. Throws InvalidArgument for another dtype, a negative count, a
  // shape that does not hold count elements, a null buffer with count > 0 (allowed with
  // zero_stage 2, where the buffer may come with each step's mark_ready), or a call after
  // the first mark_ready. Every rank must register the same parameters in the same order
  // (checked at the first finish(): a different count or total is a Mismatch).
  int add_param(std::string name, void* grad, std::int64_t count, DType dtype, compress::Shape shape = {});

  // This parameter's gradient is final for the step. Launches every bucket this makes
  // launchable. Throws InvalidArgument for an unknown id or a second mark in one step.
  void mark_ready(int param);
  // The same, with this step's gradient buffer of the parameter (count floats), which replaces
  // the registered one from now on: for gradients that live somewhere else every step, such as
  // tensors autograd allocates anew after the previous ones were released (ZeRO-2). Ignored,
  // like the mark, while sync is off. Throws InvalidArgument for a null buffer with count > 0.
  void mark_ready(int param, float* grad);

  // Launches the remaining buckets, waits for all, writes the averages back (ZeRO: into the
  // shards, shard_gradient) and returns the step's figures. Rethrows a bucket's error. See the
  // file comment for unused parameters.
  GradSyncStats finish();

  // Builds the bucket plan now (otherwise built at the first mark_ready or finish), so that a
  // ZeRO optimizer can size its shards before the first step. Local (the plan is a pure function
  // of the registered parameters). Idempotent. After it, add_param throws as after mark_ready.
  void plan_buckets();
  // ZeRO (zero_stage > 0). REQUIRES plan_buckets() or a finished step. InvalidArgument for
  // zero_stage 0, before planning, or a bucket outside [0, plan().buckets.size()).
  BucketShard bucket_shard(int bucket) const;
  // This rank's averaged gradient shard of bucket b (BucketShard::shard floats; the padding is
  // zero), valid from finish() until the next step's first launch. Element i is bucket element
  // rank() x shard + i. Same preconditions as bucket_shard.
  std::span<const float> shard_gradient(int bucket) const;

  // Gradient accumulation: with sync off, mark_ready and finish do nothing.
  void set_sync(bool on);
  bool sync_enabled() const { return sync_; }
  // Whether the buckets live in registered memory (GradSyncOptions::registered_buckets).
  bool registered_buckets() const { return registered_buckets_; }
  // Where parameter `param`'s gradient is read and written: its registered buffer, or its place
  // in its bucket with gradients_in_buckets (after planning).
  const float* gradient(int param) const { return params_.at(static_cast<std::size_t>(param)).grad; }

  const engine::BucketPlan& plan() const { return plan_; }
  // The engine's staging memory: the send buffers (per bucket, or stage 2's shared ones) and
  // ZeRO's shard buffers, in bytes. Zero before planning.
  std::size_t send_buffer_bytes() const;
  std::size_t shard_buffer_bytes() const;
  // Stage 2: the most send-buffer bytes lent at once (at most the ring's).
  std::size_t peak_send_buffer_bytes() const { return pool_.peak_lent() * sizeof(float); }
  // ZeRO: bucket_shard_layout(plan(), size()), built with the plan. Empty for zero_stage 0.
  const engine::ShardLayout& shard_layout() const { return layout_; }
  // Error-feedback residuals and PowerSGD factors: part of a training checkpoint. Cleared when
  // the buckets are rebuilt (their shapes change).
  compress::CompressionState& compression_state() { return state_; }
  std::int64_t step() const { return step_; }

  // Checkpointing. snapshot() between steps; restore() on a GradSync with the same parameters
  // registered, before its first step and (unless gradients_in_buckets, which plans at once)
  // before planning (InvalidArgument otherwise, or for an order that is not a permutation of
  // the parameters; Corrupt for a damaged compression state).
  GradSyncSnapshot snapshot() const;
  void restore(const GradSyncSnapshot& snapshot);

 private:
  struct Param {
    std::string name;
    float* grad;
    std::int64_t count;
    compress::Shape shape;
  };
  struct BucketRun;  // one bucket's buffer and its in-flight allreduce
  void check_options() const;
  void check_zero_bucket(int bucket, const char* op) const;
  void submit_allreduce(int bucket);
  void submit_reduce_scatter(int bucket, float* send);
  float* stage_gradients(int bucket) BRAID_REQUIRES(mu_);
  std::size_t send_ring_floats() const;
  std::size_t padded_elements(int bucket) const;  // ZeRO: the bucket's padded buffer; 0 for DDP
  bool sends_from_ring(int bucket) const;
  void reclaim_send_buffers();
  compress::CompressionStats reduce_scatter_bucket(BucketRun& run, std::span<float> send, std::int64_t elements);

  void ensure_plan() BRAID_REQUIRES(mu_);
  std::vector<engine::ParamInfo> param_infos() const;
  void adopt_plan(engine::BucketPlan plan) BRAID_REQUIRES(mu_);
  void move_gradients_into_buckets() BRAID_REQUIRES(mu_);
  void launch(int bucket) BRAID_REQUIRES(mu_);
  void check_same_model();
  void agree_on_unused(const std::vector<int>& unused);
  void discard_step();  // a failed step: nothing launched, nothing written back
  void rebuild_from_rank0_order();

  Communicator& comm_;
  GradSyncOptions options_;
  std::vector<Param> params_;
  engine::BucketPlan plan_;
  engine::ShardLayout layout_;  // ZeRO only
  // ZeRO stage 2 only: the shared send buffers. Lent and reclaimed under mu_; reset by
  // adopt_plan (under mu_, nothing in flight); its sizes are read between steps.
  engine::SendBufferPool pool_;
  Mutex mu_;  // serialises concurrent mark_ready calls (launching buckets) and the tracker
  std::unique_ptr<engine::ReadinessTracker> tracker_ BRAID_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<BucketRun>> runs_;
  std::vector<char> unused_;          // per parameter: no gradient this step (filled with zeros)
  std::unique_ptr<trace::TraceRecorder> own_trace_;  // from BRAID_TRACE when options.trace is unset
  compress::CompressionState state_;  // touched by the background thread only, one bucket at a time
  std::int64_t step_ = 0;
  bool sync_ = true;
  bool planned_ = false;
  bool registered_buckets_ = false;  // set once at construction
};

// Turns synchronisation off for its lifetime (DDP's no_sync): accumulate K-1 micro-steps
// inside one, run the K-th outside it.
class NoSync {
 public:
  explicit NoSync(GradSync& sync) : sync_(sync), was_(sync.sync_enabled()) { sync_.set_sync(false); }
  ~NoSync() { sync_.set_sync(was_); }
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  GradSync& sync_;
  bool was_;
};

}  // namespace braid
