// braid-train --zero 3 on the mesh (--tp, --pp, --dropout): each (pipeline stage, TP piece)'s
// parameters sharded over its data-parallel group, FSDP + TP ("2D") and ZeRO-3 + Megatron's way.
// docs/zero.md "ZeRO on the mesh".
//
// Units. One FullyShardedModule over the stage's layers (a Sequential of them, in model order)
// and one unit per pipeline chunk: the schedule calls a chunk's forward, backward (or zero
// bubble's backward_input and backward_weight) one micro-batch at a time, and each such call
// runs the whole chunk, so a chunk is the finest thing that can be gathered for a call.
//
// A step. Before every call on (mb, chunk) the chunk's unit is allgathered over the dp group,
// after it released (its storage really freed: the autograd graphs of the micro-batches in
// flight keep the StorageImpl, which the next gather fills again). So at most one unit is
// gathered at any time, whatever the cap (--max-gathered-units >= 1), and no prefetch runs:
// the next call's unit is known only to the schedule. The backwards run under set_sync(false)
// and accumulate every micro-batch's gradient into .grad, as the mesh's DDP does; after the
// pipeline the synchronising synchronize() reduce-scatters (kAvg) each unit once per step.
// Wire bytes per rank and step, n = the dp size, S = the stage's padded shard floats (all its
// units), M micro-batches, calls = 2 (forward + backward; zb1: 3, backward_input and
// backward_weight each gather): (n - 1) x S x 4 x (calls x M + 1).
//
// Per micro-batch gathering (not once per step) is what keeps the cap meaningful: holding every
// unit through the step would hold the whole stage's parameters, as without ZeRO-3.
//
// Finer units (--zero-unit-layers K >= 1). Every chunk is cut into units of K layers with
// parameters (the parameterless ones joining the next unit, trailing ones the last), so a
// transformer block is a unit at K = 1. A call's forward then runs the chunk unit by unit
// (SequentialStage's chunk runner -> FullyShardedModule::forward_units): each unit gathered just
// before its layers, the next ones prefetched while it computes, up to --max-gathered-units
// alive, and freed after them; the hooks forward_units leaves on each unit's output gather it
// again when that micro-batch's backward reaches it (prefetching the unit below), so forward and
// backward each gather every unit of the chunk once per micro-batch. Prefetch stays inside the
// chunk: which chunk the next call runs is the schedule's. After every call the chunk's units are
// released, so nothing stays gathered between calls. The arithmetic is the chunk units' (the same
// fp32 values reach the same ops; the reduce-scatter adds each element in rank order whatever
// flat buffer holds it), so the run is bit for bit the chunk units' and the mesh DDP's. Wire bytes
// as above (S is the same but for the per-unit padding); the peak gathered bytes fall from the
// largest chunk to the cap's largest units. zb1's backward_input skips the first chunk's autograd
// (no input gradient), so there its backward_weight gathers alone.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/parallel/layer_partition.h"
#include "braid/parallel/pipeline_stage.h"
#include "braid/torch/fully_sharded.h"
#include "braid/torch/sequential_stage.h"
#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

// `layers` the whole (TP-split) model's; `stage` this rank's pipeline stage. The codecs as the
// data-parallel trainer's stage 3 (fully_sharded_options): --zero-pp qwz gathers each chunk in
// int8 blocks from the exact fp32 shards, qgz reduce-scatters its gradients in int8 (the
// two-stage scheme), --precision moves both in 16 bits; with --tp see average_replicated_shard_gradients.
// hpz is refused on the mesh (train_config.cc).
struct MeshFullySharded {
  std::unique_ptr<torch::FullyShardedModule> module;
  std::vector<int> chunk_units;  // chunk c holds units [chunk_units[c], chunk_units[c + 1])
  bool units_inside_chunks = false;  // --zero-unit-layers >= 1
};
MeshFullySharded make_mesh_fully_sharded(Communicator& data_parallel, const TrainConfig& config,
                                         ::torch::nn::Sequential& layers, const parallel::LayerPartition& partition,
                                         int stage);

// The units of one chunk, layers [begin, end) of the stage's Sequential `own`: groups of
// `layers_per_unit` layers with parameters, each with the parameterless layers before it; the
// trailing parameterless ones join the last. REQUIRES: a layer in the range holds a parameter.
std::vector<torch::ShardedUnit> units_inside_chunk(::torch::nn::Sequential& own, int begin, int end, int chunk,
                                                   int layers_per_unit);

// --zero-pp with --tp: agrees the TP-replicated parameters (`replicated`, by name: LayerNorms,
// row-parallel biases) over the TP group. Their gradients are the same float on every TP rank
// when the forward sees exact weights, but qwZ and qgZ quantise each rank's flat buffer in blocks
// that mix those parameters with the rank's own TP pieces, so each TP rank rounds them with other
// block scales and their shard gradients differ by the rounding; stepped apart, the copies would
// drift. Averaging (kAvg, rank order: the same bytes on every TP rank) the replicated elements of
// every shard gradient makes every TP rank take the same step from the same master values. The
// units' layouts are the same on every TP rank (TP pieces of equal shapes, in the same order), so
// each rank's shard holds the same replicated elements at the same offsets and the TP ranks issue
// the same allreduce. Call after the synchronising synchronize(), before unscaling and clipping.
void average_replicated_shard_gradients(torch::FullyShardedModule& sharded, const std::set<std::string>& replicated,
                                        Communicator& tp);

// The pipeline stage the runtime drives: `inner`'s calls between a gather and a release of the
// chunk's unit.
class FullyShardedPipelineStage : public parallel::PipelineStage {
 public:
  // With units inside the chunks installs `inner`'s chunk runner (forward_units over the chunk's).
  // `built`: its module taken over by `sharded` (the trainer owns it), its chunks' units kept.
  FullyShardedPipelineStage(torch::SequentialStage& inner, torch::FullyShardedModule& sharded,
                            const MeshFullySharded& built);

  parallel::TensorShape input_shape(int chunk) const override { return inner_.input_shape(chunk); }
  parallel::TensorShape output_shape(int chunk) const override { return inner_.output_shape(chunk); }
  parallel::StageTensor forward(int mb, int chunk, const parallel::StageTensor& input) override;
  parallel::StageTensor backward_input(int mb, int chunk, const parallel::StageTensor& grad_output) override;
  void backward_weight(int mb, int chunk) override;
  parallel::StageTensor backward(int mb, int chunk, const parallel::StageTensor& grad_output) override;

 private:
  // Chunk units: `call` between a gather and a release of the chunk's unit. Units inside the
  // chunks: `call` gathers them itself (the runner, the backward hooks); they are released after.
  template <typename Call>
  auto gathered(int chunk, Call call);

  torch::SequentialStage& inner_;
  torch::FullyShardedModule& sharded_;
  std::vector<int> chunk_units_;
  bool units_inside_chunks_ = false;
};

}  // namespace braid::train
