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
// Flat parameters (FSDP's flat_param, Zhao et al. 2023; DeepSpeed's fp32 ZeRO path): at
// construction every bucket's parameters are copied into one flat fp32 tensor of `padded`
// floats, at the GradSync plan's offsets (the layout GradSync reduce-scatters, engine/
// grad_sync.h BucketShard: rank r owns [r x shard, (r+1) x shard), of which [begin, end) are
// real elements), and each parameter's data is pointed at its view of that tensor (set_data:
// the parameter objects, their .grad tensors, DDP's hooks and GradSync's registered gradient
// buffers are unchanged; only where the parameter values live moves). This rank's shard is then
// a contiguous range of the parameters' own memory: the inner optimizer, made by the factory,
// steps one leaf tensor per bucket over [begin, end) of the flat tensor (a detach()ed narrow,
// writing through), so there is no fp32 master copy (for fp32 training the parameters are the
// master) and the optimizer state is 1/n of what it would be over the whole model. That is
// exact for any optimizer whose update is elementwise (SGD with momentum, Adam, AdamW, ...:
// each element's new value depends on that element's parameter, gradient and state only), so
// stepping a flat shard equals stepping the parameters; it is NOT for one that mixes elements
// (LBFGS, per-tensor norms such as LAMB's), which must not be used. Parameter groups are not
// supported: one group over every shard (its options are the factory's). The padding (the tail
// of the last rank's shard, past the bucket's elements) is outside every stepped range, so it
// stays exactly 0 whatever the optimizer (weight decay included).
//
// 16-bit parameters (ZeroOptions::parameter_dtype bf16, mixed precision): the flat tensors are
// bf16 instead, and the inner optimizer steps an fp32 master shard per bucket (as with qwZ).
//
// step(): each shard's .grad is set to GradSync's averaged shard itself (a from_blob view of the
// reduce-scatter's receive buffer, its real part: no copy and no gradient memory of our own;
// valid from finish() until the next step's first launch, which is as long as step() needs),
// the inner step writes the new values straight into this rank's range of the parameters, then
// each bucket's flat tensor is allgathered in place (send = recv + rank x shard; all buckets in
// flight, then one wait). No staging buffer, no copy back: every rank ends with identical
// parameters. ZeRO++ qwZ (ZeroOptions::quantize_weights): the inner step writes the master
// shard instead, which is quantised, allgathered as int8 and dequantised into the flat tensor by
// every rank, its owner included (compress/quantized_allgather.h).
//
// Checkpoints: zero_checkpoint.h (every rank saves its shards and their inner state, and a
// checkpoint loads at any world size, resharded). Construct the ZeroOptimizer after any
// parameters are loaded and do not replace the parameters' data afterwards (set_data, load):
// the flat tensors are built from the parameters at construction and the parameters must stay
// views of them; load_zero_checkpoint writes into the shards and allgathers, in place.
//
// Thread-safety: one thread (the training loop). Collective: every rank of the DDP's
// communicator constructs it, and calls step() and clip_grad_norm() at the same points.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "braid/compress/codec_spec.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/model_state_bytes.h"

namespace braid::torch {

// ZeRO++ switches of a ZeroOptimizer (docs/zero.md "ZeRO++"); the defaults are plain ZeRO. The
// gradient side (qgZ) is the DDP's: DdpOptions::zero_codec.
struct ZeroOptions {
  // qwZ: the parameter allgather moves int8 (compress/quantized_allgather.h). The parameters
  // every rank computes with are then the dequantised shards (bitwise identical on every rank,
  // within max|block| / 254 of the exact values), and the inner optimizer steps a separate fp32
  // master shard holding the exact values (4 bytes per shard element on each rank, counted as
  // model_state_bytes().master), so quantisation never compounds from step to step. A non-finite
  // weight is refused on every rank (InvalidArgument naming the rank and the bucket).
  bool quantize_weights = false;
  std::uint32_t weight_block = 0;  // int8 elements per fp32 scale (0: kDefaultBlock, 1024)
  // What the quantised allgather moves: int8 (qwZ), or bf16 / fp16, the 16-bit weights of mixed
  // precision (--precision bf16|fp16: half the bytes; the master shards exact as for int8).
  compress::CodecId weight_codec = compress::CodecId::kInt8;
  // The dtype the flat parameters (the model's compute copy, whole on every rank) are stored in:
  // kFloat32, or kBFloat16 (mixed precision's 16-bit parameters: half the bytes of the full
  // buffer). With kBFloat16 every rank keeps an exact fp32 master shard (as qwZ does) which the
  // inner optimizer steps; each step rounds it to bf16 (to nearest even) into the rank's slot of
  // the flat tensor, and the flat tensors are allgathered in place in bf16 (2 bytes per element
  // on the wire). The parameters become bf16 tensors: run the forward under bf16 autocast (an
  // fp32 input meets bf16 weights otherwise). Their gradients stay fp32 (stage 1: DDP's .grad
  // buffers, which autograd accumulates the bf16 gradients into; stage 2: converted as each is
  // handed to GradSync), so the reduce-scatter and the step see what they see in fp32 storage.
  // Not with quantize_weights (the codec is the storage), nor kHalf (LibTorch 1.13 has no fp16
  // CPU matmul: fp16 parameters could not be computed with).
  ::torch::ScalarType parameter_dtype = ::torch::kFloat32;
};

using OptimizerFactory = std::function<std::unique_ptr<::torch::optim::Optimizer>(std::vector<::torch::Tensor>)>;

// Which elements a gradient norm counts, and over which ranks it sums. The default is plain
// data parallelism: every parameter, summed over the DDP's communicator. On a mesh (ZeRO over
// the dp axis of a dp x pp x tp job) the norm is the whole model's: sum over every rank of the
// job (each dp shard and each tp/pp piece holds disjoint elements) and count a parameter that
// is the same on every TP rank (a LayerNorm) on one TP rank only (gradient_clipping.h).
struct GradientNormScope {
  Communicator* sum_over = nullptr;                              // null: the DDP's communicator
  std::function<bool(const ::torch::Tensor& param)> counted;     // null: every parameter
};

class ZeroOptimizer {
 public:
  // Builds the bucket plan now (GradSync::plan_buckets) and moves the parameters into the flat
  // tensors (with qwZ, copies this rank's shards into the master shards). Throws
  // InvalidArgument when the DDP's zero_stage is not 1 or 2 or the factory returns null.
  ZeroOptimizer(DistributedDataParallel& ddp, const OptimizerFactory& make_inner, ZeroOptions zero = {});
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  // REQUIRES: ddp.synchronize() of this step has returned. Collective.
  void step();
  // Mixed precision under a loss scale (parallel/loss_scaler.h): divides this step's shard
  // gradients by `scale` and returns whether any rank of `group` (null: the DDP's communicator)
  // found a non-finite element in its shards, the overflow decision every rank takes alike.
  // REQUIRES: as step(), before clip_grad_norm() and step(). Collective over the group.
  bool unscale_gradients(double scale, Communicator* group = nullptr);
  // After an agreed overflow: drops this step's gradients without stepping, so the parameters and
  // the optimizer state stay what they were, on every rank.
  void skip_step() { gradients_loaded_ = false; }
  // The model's gradients (DistributedDataParallel::zero_grad).
  void zero_grad();
  // Scales this step's shard gradients by max_norm / (norm + 1e-6) when the global 2-norm of
  // the averaged gradient exceeds max_norm (torch.nn.utils.clip_grad_norm_'s rule) and returns
  // the norm before clipping. Each element is counted once: every rank sums the squares of its
  // real shard elements (in double), and the sums are allreduced over scope.sum_over (default:
  // the DDP's communicator; on a mesh, every rank of the job, with TP-replicated parameters
  // counted on one TP rank: GradientNormScope). A non-finite norm is returned and nothing is
  // scaled. REQUIRES: as step(), before it. Collective over scope.sum_over.
  double clip_grad_norm(double max_norm, const GradientNormScope& scope = {});

  // This rank's parameters (the flat tensors, padding included: at most n - 1 floats per bucket
  // more than the model's elements) + gradients (stage 1: the model's .grad, whole; stage 2:
  // this rank's averaged shards, GradSync's receive buffers, since the DDP releases the full
  // ones) + the inner optimizer's state (this rank's shards), in bytes (model_state_bytes.h);
  // master is 0 but with qwZ (the master shards). GradSync's send buffers are communication buffers, not counted
  // (GradSync::send_buffer_bytes()).
  ModelStateBytes model_state_bytes();
  // What ZeroOptimizer adds for communication: 0, the allgather runs in place on the flat
  // parameters (GradSync's own buffers, a padded send buffer and a shard per bucket, are the
  // engine's).
  std::int64_t communication_buffer_bytes() const { return 0; }
  // The bytes this rank sends per step() for the parameter allgathers, counted as GradSync
  // counts its reduce-scatters (algorithm bytes: (n-1) x shard x 4 per bucket), so that a
  // step's gradient and parameter traffic together read as DDP's allreduce (plus padding).
  // qwZ: (n-1) x the int8 payload of a shard per bucket (quantized_allgather_payload_bytes).
  std::uint64_t gather_wire_bytes() const;
  // What the allgathers would send in fp32, (n-1) x shard x 4 per bucket: also what an fp32
  // reduce-scatter of the same buckets sends, the reference of qwZ's and qgZ's cuts.
  std::uint64_t fp32_gather_wire_bytes() const;
  const ZeroOptions& zero_options() const { return zero_; }

  ::torch::optim::Optimizer& inner() { return *inner_; }
  // Bucket b's parameters, flat ([padded] elements of ZeroOptions::parameter_dtype; every
  // parameter of the bucket is a view of it).
  const ::torch::Tensor& flat_parameters(int bucket) const { return at(bucket).flat; }
  // The inner optimizer's parameter for bucket b: [begin, end) of flat_parameters(b) (qwZ: the
  // real part of master_shard(b)).
  const ::torch::Tensor& shard(int bucket) const { return at(bucket).owned; }
  // qwZ or 16-bit parameters: bucket b's exact fp32 shard ([shard] floats, padding 0); else undefined.
  const ::torch::Tensor& master_shard(int bucket) const { return at(bucket).master; }
  int stage() const { return ddp_.options().zero_stage; }
  // For checkpoints (zero_checkpoint.h): the wrapped DDP, the buckets and this rank's shard of
  // each (GradSync::bucket_shard, fixed at construction).
  DistributedDataParallel& ddp() { return ddp_; }
  int bucket_count() const { return static_cast<int>(shards_.size()); }
  const BucketShard& bucket_shard(int bucket) const { return at(bucket).layout; }
  // Every rank's flat parameters from the shards, as step() ends (qwZ: quantised from the master
  // shards): for a loader that wrote the shards (zero_checkpoint.h). Collective.
  void gather_parameters();

 private:
  struct Shard {
    BucketShard layout;
    ::torch::Tensor flat;   // [padded] parameter_dtype: the bucket's parameters at the plan's offsets, 0 padding
    ::torch::Tensor owned;  // [end - begin]: a leaf over flat's [begin, end), .grad GradSync's shard
    // qwZ or 16-bit parameters: [shard] fp32, this rank's exact shard (padding 0); `owned` is a
    // leaf over its real part instead of over flat's, and flat receives the rounded values.
    ::torch::Tensor master;
  };

  const Shard& at(int bucket) const { return shards_.at(static_cast<std::size_t>(bucket)); }
  // Whether the inner optimizer steps a separate fp32 master shard (qwZ, 16-bit parameters).
  bool keeps_master() const { return zero_.quantize_weights || sixteen_bit(); }
  bool sixteen_bit() const { return zero_.parameter_dtype != ::torch::kFloat32; }
  void check_options() const;
  void load_gradients();  // once per step: GradSync's shards become the owned shards' gradients
  // This rank's share of the squared norm: its real shard elements of the counted parameters.
  double shard_gradient_squares(const GradientNormScope& scope) const;
  ::torch::Tensor owned_shard(Shard& s, int bucket) const;
  std::vector<Work> start_gathers();

  DistributedDataParallel& ddp_;
  ZeroOptions zero_;
  std::vector<Shard> shards_;  // per bucket of the plan
  std::unique_ptr<::torch::optim::Optimizer> inner_;
  bool gradients_loaded_ = false;
};

}  // namespace braid::torch
