// braid::torch::FullyShardedModule: ZeRO stage 3 for LibTorch models, the way PyTorch's FSDP
// does it (Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
// 2023; Rajbhandari et al., ZeRO, 2020). docs/zero.md "Stage 3: FullyShardedModule".
//
//   torch::nn::Sequential layers = net->layers();   // the model, as a Sequential
//   braid::torch::FullyShardedModule fsdp(comm, layers, braid::torch::units_of_layers_with_parameters(layers),
//       [](std::vector<torch::Tensor> shards) {
//         return std::make_unique<torch::optim::Adam>(std::move(shards), torch::optim::AdamOptions(1e-3));
//       });
//   for (...) {
//     fsdp.set_sync(last_micro_batch);          // false: accumulate locally (FSDP's no_sync)
//     loss_fn(fsdp.forward(x), y).backward();   // units gathered, run, freed; gradients reduce-scattered
//     fsdp.synchronize();                       // every reduce-scatter done: shard gradients averaged
//     fsdp.clip_grad_norm(1.0);                 // optional, over every rank's shards
//     fsdp.step();                              // the inner optimizer steps this rank's shards
//   }
//
// Units. The module is a Sequential; a unit is a contiguous range of its layers (FSDP's wrapped
// submodule: a Linear of the MLP, a transformer block, the embeddings, the head), and every
// parameter lies in exactly one unit (there is no root unit: the ranges must cover the layers).
// Per unit one flat fp32 buffer laid out by engine::plan_shard_layout (a group per unit, 64-byte
// alignment): n x S floats, rank r owning [r S, (r+1) S). Persistently each rank holds only its
// shard of every unit (S floats: the inner optimizer's parameter for the unit, one per unit, like
// ZeroOptimizer's shards) and the shard's gradient (S floats: the reduce-scatter's output). The
// module's parameters are views of the unit's full buffer (set_data, as ZeroOptimizer does), whose
// storage exists only while the unit is gathered.
//
// A step: forward() runs unit by unit: gather (wait its prefetch, or allgather now), prefetch the
// next unit(s) on the communicator's background queue (overlapping this unit's compute), run its
// layers, free it; a hook on the unit's output tensor fires when backward reaches the unit
// (before any of its own backward nodes) and gathers it again, prefetching the unit backward
// reaches next. When every parameter's gradient of a unit is final (the AccumulateGrad post hooks,
// as in DDP) the unit is freed, its gradients are added into a zeroed padded flat buffer, the
// .grad tensors are dropped, and the buffer is reduce-scattered (ReduceOp::kAvg) into the shard's
// gradient; the flat buffer is dropped when that completes. Reduce-scatters are issued in unit
// order from the last unit down (a finished unit waits for the ones after it), so every rank
// issues the same collectives in the same order. At most max_gathered_units units are allocated
// at once, prefetches included (parallel/unit_gather_tracker.h holds the rules and the counters).
//
// Freeing really frees: autograd's saved tensors share the parameters' StorageImpl, so a unit is
// freed by taking the memory out of the storage (an empty DataPtr, nbytes 0) and gathered by giving
// the same StorageImpl a buffer again: FSDP's storage().resize_(0). The buffers come from a pool
// (storage_pool.h) that keeps at most max_gathered_units idle ones, so a gather does not fault
// fresh pages in, and the memory the cap bounds is all the pool holds for parameters. A freed
// parameter's data_ptr() is LibTorch's "data is not allocated" error; an op reading it reads
// through a null pointer (a crash, never stale values): use FullParameters.
//
// Accumulation (set_sync(false)): backward frees the units but keeps the full gradients in .grad,
// where autograd accumulates the micro-batches exactly as DDP's .grad does; the synchronising
// backward reduce-scatters the sums. So the averaged gradient is the same float as DDP's, at the
// price of full gradients between micro-batches (FSDP's no_sync makes the same trade).
// Unused parameters: as DDP's. With allow_unused a parameter without a gradient counts as zero;
// otherwise synchronize() raises InvalidArgument on every rank (naming the parameters on the ranks
// that missed them; the ranks agree through one 8-byte-per-rank allgather per step), frees
// everything, and the next step works. Ranks may differ in which parameters got gradients:
// reduce-scatters are issued in unit order only, a unit with a missing gradient holding back the
// ones below it until synchronize(), which issues them all, so every rank issues the same ones.
//
// Outside forward and backward nothing is gathered. What needs the whole model (evaluation, a
// digest, export) runs inside a FullParameters scope (FSDP's summon_full_params), which gathers
// every unit outside the cap and frees them at its end; full_state_dict() copies them out.
//
// Optimizers: as ZeroOptimizer's, any elementwise one (SGD, Adam, AdamW); the padding inside and
// at the end of a shard has zero parameters and zero gradients, and such an update keeps it zero.
//
// Thread-safety: one thread, the training loop (LibTorch runs CPU backward and its hooks on the
// thread that calls backward()). Collective: every rank constructs it and calls forward (with
// backward), synchronize, clip_grad_norm, step, FullParameters and full_state_dict alike.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/comm/work.h"
#include "braid/compress/codec_spec.h"
#include "braid/compress/compression_state.h"
#include "braid/engine/shard_layout.h"
#include "braid/parallel/unit_gather_tracker.h"
#include "braid/torch/model_state_bytes.h"
#include "braid/torch/secondary_partition.h"
#include "braid/torch/storage_pool.h"
#include "braid/torch/zero_optimizer.h"  // OptimizerFactory

namespace braid::torch {

struct ShardedUnit {
  std::string name;
  int begin = 0, end = 0;  // layers [begin, end) of the Sequential
};

// FSDP's auto-wrap policy for a Sequential: every layer holding parameters is a unit, with the
// parameterless layers before it (a Flatten, a ReLU) and, for the last unit, after it.
// Throws InvalidArgument when no layer holds a parameter.
std::vector<ShardedUnit> units_of_layers_with_parameters(::torch::nn::Sequential& layers);

struct FullyShardedOptions {
  int max_gathered_units = 2;      // >= 1; 1 means no prefetch
  bool allow_unused = false;       // a parameter without a gradient counts as zero
  bool broadcast_buffers = true;   // rank 0's buffers (BatchNorm statistics) after each synchronize()
  std::size_t alignment_bytes = 64;
  // ZeRO++ on stage 3 (docs/zero.md): the codec each unit's allgathers move its shards in (kInt8:
  // qwZ; kBf16 / kFp16; kNone: fp32, exact), from the exact fp32 shard every rank keeps, so the
  // quantisation never compounds; and the codec of its gradient reduce-scatter (kInt8: qgZ;
  // fp16, bf16, sign; kNone: fp32). FullParameters always gathers exactly (with fp32 storage; evaluation, digest,
  // export see the master values).
  compress::CodecId weight_codec = compress::CodecId::kNone;
  compress::CodecId gradient_codec = compress::CodecId::kNone;
  // ZeRO++ hpZ (secondary_partition.h): each unit's backward allgather rebuilds it from a host-local
  // copy the forward left, over the host's ranks only. Costs n / k shards of memory per unit.
  bool hierarchical_partition = false;
  // The dtype each gathered unit is stored in (the compute copy): kFloat32, or kBFloat16 (mixed
  // precision's 16-bit parameters: half the gathered bytes and the pool's). With kBFloat16 the
  // rank's fp32 shard stays the master the optimizer steps and checkpoints save; each gather
  // rounds it (to nearest even) into the rank's slot of the unit and allgathers in place in bf16
  // (FullParameters too: evaluation, digest and export then see the bf16 values the forward
  // computes with; full_state_dict() still gathers the exact fp32 values). The parameters are
  // bf16 tensors: run the forward under bf16 autocast. Their gradients are kept in fp32 (each
  // is converted once final, so micro-batches accumulate in fp32). weight_codec must be kNone
  // or kBf16 (the wire is the storage), and hierarchical_partition is refused.
  ::torch::ScalarType parameter_dtype = ::torch::kFloat32;
};

// One step's traffic, for the run report.
struct FullyShardedStepStats {
  std::uint64_t wire_bytes = 0;        // allgathers + reduce-scatters since the last synchronize()
  std::uint64_t dense_wire_bytes = 0;  // what DDP's ring allreduce of the same gradients sends
  double seconds_waiting = 0;          // blocked on gathers and in synchronize()
};

class FullyShardedModule {
 public:
  // Checks the ranks hold the same model, broadcasts rank 0's parameters and buffers, moves every
  // parameter into its unit's flat buffer, keeps this rank's shards and frees the rest. Throws
  // InvalidArgument for ranges that do not partition the layers, a unit without parameters, a
  // parameter that is not a dense contiguous fp32 CPU tensor or is shared by two units, a bad
  // max_gathered_units, or a null optimizer.
  FullyShardedModule(Communicator& comm, ::torch::nn::Sequential layers, std::vector<ShardedUnit> units,
                     const OptimizerFactory& make_inner, FullyShardedOptions options = {});
  ~FullyShardedModule();
  FullyShardedModule(const FullyShardedModule&) = delete;
  FullyShardedModule& operator=(const FullyShardedModule&) = delete;

  ::torch::Tensor forward(const ::torch::Tensor& input);
  // false: the following backwards accumulate full gradients locally; true (default): the next
  // backward reduce-scatters.
  void set_sync(bool sync) { sync_ = sync; }
  bool sync_enabled() const { return sync_; }
  // After each backward. Synchronising: waits for every reduce-scatter (the shard gradients are
  // then averaged), handles parameters without gradients, broadcasts buffers. Under set_sync(false)
  // only ends the backward. Rethrows communication errors.
  FullyShardedStepStats synchronize();
  // Drops any full gradient left in .grad (the shard gradients are overwritten each step).
  void zero_grad();
  // torch.nn.utils.clip_grad_norm_'s rule over the averaged gradient, each element once (one
  // 8-byte allreduce of the shards' squares). Returns the norm before clipping; non-finite: returned,
  // nothing scaled. REQUIRES: a synchronising synchronize() of this step. `scope` (as
  // ZeroOptimizer's): the squares summed over scope.sum_over instead of the module's communicator,
  // and only of the parameters scope.counted accepts (a mesh: the whole job, TP-replicated
  // parameters on TP rank 0 only).
  double clip_grad_norm(double max_norm, const GradientNormScope& scope = {});
  // The inner optimizer's step over this rank's shards. REQUIRES: as clip_grad_norm.
  void step();
  // Mixed precision under a loss scale (parallel/loss_scaler.h): divides this step's shard
  // gradients by `scale` and returns whether any rank found a non-finite element in its shards,
  // the agreed overflow decision (one allreduce, over `agree_over` when given: a mesh agrees over
  // the whole job). REQUIRES: synchronize() of this step returned; before clip_grad_norm() and
  // step(). After an overflow the caller skips step(). Collective.
  bool unscale_gradients(double scale, Communicator* agree_over = nullptr);

  // For a pipeline stage (tools/braid_train/mesh_fully_sharded.h), whose schedule runs each unit's
  // forwards and backwards one micro-batch at a time and not through forward(): gather unit u
  // now (no prefetch; within the cap and the counters) and release it after the call. Backwards
  // then run under set_sync(false), accumulating into .grad, and the step's synchronising
  // synchronize() reduce-scatters every unit once. Collective over the communicator, in the same
  // order on every rank.
  void gather_unit(int u);
  void release_unit(int u) { release(u); }
  // For a pipeline chunk holding several units (mesh_fully_sharded.h, --zero-unit-layers):
  // forward() over units [first, last) only (their layers in order on `input`), prefetching
  // within that range alone, in the forward and in the backward its hooks gather for: the next
  // call's units are the schedule's to choose. Every micro-batch's backward gathers each unit
  // again; the caller releases the range after each call. REQUIRES: 0 <= first < last <= units.
  ::torch::Tensor forward_units(int first, int last, const ::torch::Tensor& input);
  // For backwards that bypass the AccumulateGrad hooks (torch::autograd::grad, as zero bubble's
  // weight pass does, adding into .grad itself): every parameter whose .grad is defined now
  // counts as having got its gradient in this backward. Call before the synchronising synchronize().
  void count_gradients_in_grad();

  // RAII: every unit gathered for the scope's life (evaluation, a digest, export), outside the cap
  // and the counters. Collective. REQUIRES: not inside forward/backward; forward() is refused inside.
  class FullParameters {
   public:
    explicit FullParameters(FullyShardedModule& module);
    ~FullParameters();
    FullParameters(const FullParameters&) = delete;
    FullParameters& operator=(const FullParameters&) = delete;

   private:
    FullyShardedModule& module_;
  };
  // The whole model, parameter name -> a copy. Collective.
  ::torch::OrderedDict<std::string, ::torch::Tensor> full_state_dict();

  // This rank's real allocations: parameters = the shards plus any unit gathered now, gradients =
  // the shard gradients plus any full .grad alive, the inner optimizer's state; no master.
  ModelStateBytes model_state_bytes();
  const parallel::GatherCounters& counters() const { return tracker_.counters(); }
  int unit_count() const { return static_cast<int>(units_.size()); }
  int max_gathered_units() const { return options_.max_gathered_units; }
  ::torch::ScalarType parameter_dtype() const { return options_.parameter_dtype; }
  const ShardedUnit& unit(int u) const { return units_.at(static_cast<std::size_t>(u)).range; }
  // Bytes unit u's full buffer holds now (its StorageImpl's nbytes: 0 when freed).
  std::int64_t unit_storage_bytes(int u) const;
  // What the storage pools hold (idle and lent buffers): communication buffers, bounded by
  // (max_gathered_units + 2 + reduce-scatters in flight) x the largest unit.
  std::int64_t pool_bytes() const { return parameter_pool_.held_bytes() + gradient_pool_.held_bytes(); }
  // hpZ: the backward allgathers that stayed inside the host (0 without hpZ).
  std::int64_t host_allgathers() const { return host_allgathers_; }
  const ::torch::Tensor& shard(int u) const { return units_.at(static_cast<std::size_t>(u)).shard; }
  std::int64_t parameter_count() const;
  const engine::ShardLayout& layout() const { return layout_; }
  ::torch::optim::Optimizer& inner() { return *inner_; }
  Communicator& communicator() { return comm_; }
  // For checkpoints (zero_checkpoint.h): the wrapped layers (their buffers), and the call a loader
  // makes after it wrote new values into the shards (hpZ's host copies are then stale).
  ::torch::nn::Sequential& layers() { return layers_; }
  void shards_written();

 private:
  struct Param {
    std::string name;
    ::torch::Tensor tensor;
    int unit = 0;
    std::int64_t offset = 0;  // in the unit's flat buffer
    bool final = false;       // its gradient became final in this backward
  };
  struct Unit {
    ShardedUnit range;
    std::vector<int> params;
    std::int64_t shard_elements = 0, elements = 0;
    ::torch::Tensor full;   // [elements]: storage released while free
    ::torch::Tensor shard;  // [shard_elements]: the inner optimizer's parameter
    std::optional<Work> gather;
    int final_params = 0;
    bool backward_done = false;
    ::torch::Tensor flat_grad;  // the reduce-scatter's send buffer while it runs
    std::optional<Work> reduce;
    bool host_gather = false;   // hpZ: the gather in flight rebuilds from the host's slices
  };
  void set_compressed_wire();
  void check_parameter_dtype() const;
  bool sixteen_bit() const { return options_.parameter_dtype != ::torch::kFloat32; }
  // Every rank's exact shards into unit.full in its storage dtype (16 bits: this rank's shard
  // rounded into its slot first, then in place). REQUIRES: unit.full holds a pool buffer.
  Work start_exact_gather(Unit& unit);
  static void wait_all(std::vector<Work*> works);

  void build_units(std::vector<ShardedUnit> ranges);
  void add_parameters_of(int layer, Unit& unit, std::set<const void*>& seen);
  void check_same_model_everywhere();
  void build_buffers();
  void build_buffer(Unit& unit);
  void hook_accumulators();
  struct Window {  // the units a forward (and its backward) runs and prefetches within
    int begin = 0, end = 0;
  };
  void check_not_summoned(const char* op) const;
  void ensure_gathered(int u, int direction, Window window);
  void issue_gather(int u, int direction);
  void wait_gather(int u);
  void release(int u);
  void before_backward(int u, Window window);
  void gradient_final(int param);
  void after_backward(int u);
  void issue_ready_reduces();
  void reduce(int u);
  void reap_reduces(bool wait_all);
  void settle_unused();
  void end_backward();
  void broadcast_buffers();
  void timed_wait(Work& work);
  double shard_gradient_squares(const GradientNormScope& scope) const;

  Communicator& comm_;
  ::torch::nn::Sequential layers_;
  FullyShardedOptions options_;
  std::vector<Param> params_;
  std::vector<Unit> units_;
  engine::ShardLayout layout_;
  parallel::UnitGatherTracker tracker_;
  std::optional<SecondaryPartition> secondary_;  // hpZ
  std::vector<std::int64_t> gather_payload_;     // per unit: bytes per peer of a global allgather
  std::uint64_t wire_saved_ = 0;                 // hpZ: global allgather bytes its host gathers did not send
  std::int64_t host_allgathers_ = 0;
  compress::CompressionState codec_state_;  // qgZ keeps no residual; the codecs want a state
  // Full buffers of gathered units, and the reduce-scatters' padded send buffers (two idle kept:
  // a backward has about one in flight while the next unit computes), both sized to the largest unit.
  static constexpr int kIdleGradientBuffers = 2;
  StoragePool parameter_pool_{0, 0}, gradient_pool_{0, 0};
  std::unique_ptr<::torch::optim::Optimizer> inner_;
  std::vector<std::pair<std::shared_ptr<::torch::autograd::Node>, std::uintptr_t>> hooks_;
  bool sync_ = true;
  bool summoned_ = false;
  int next_reduce_ = 0;  // the unit whose reduce-scatter is issued next (counting down)
  std::uint64_t wire_at_last_sync_ = 0;
  std::uint64_t dense_per_step_ = 0;
  double seconds_waiting_ = 0;
};

}  // namespace braid::torch
