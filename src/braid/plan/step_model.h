// The step-time model: one training iteration of a transformer on a cluster under a parallel
// layout (dp x tp x pp, ZeRO stage, micro-batches, schedule, recomputation, compression).
//
//   t_compute  = train FLOP per micro-batch / (tp pp) / (peak FLOP/s x efficiency)
//   t_tp       = layers/pp x allreduces x ring allreduce(b s h bytes, tp) on the TP link
//   t_pp       = 2 v x (alpha + boundary bytes / bandwidth) on the stage-boundary link
//   t_pipeline = m (t_compute + t_tp + t_pp) / (1 - bubble fraction)
//   t_dp       = gradient sync of Phi/(tp pp) (ZeRO stage, compression) on the DP group's links
//   exposed    = t_dp - min(t_dp, overlap x the backward it can hide behind)
//   step       = t_pipeline + exposed
//
// TP and PP communication are on the critical path (seeds/004 2.3: activations wait for them);
// DP communication overlaps backward. Ranks are placed tp innermost, then dp, then pp (as
// Megatron-LM), so a TP group stays inside a node when tp <= devices per node.
// Not modelled: the optimizer step, embedding imbalance across stages, kernel launch gaps.
#pragma once

#include "braid/plan/bubble.h"
#include "braid/plan/compression.h"
#include "braid/plan/estimate.h"
#include "braid/plan/link_presets.h"
#include "braid/plan/memory.h"
#include "braid/plan/model_spec.h"

namespace braid::plan {

struct ClusterSpec {
  int nodes = 1;
  int devices_per_node = 8;
  double flops = 989e12;        // peak dense 16-bit FLOP/s per device (H100 SXM)
  double efficiency = 0.5;      // share of peak the matmuls reach
  double memory = 80.0 * (1ull << 30);
  LinkParams intra = link_preset("nvlink");
  LinkParams inter = link_preset("ib-ndr");
  int world() const { return nodes * devices_per_node; }
};

struct Layout {
  int dp = 1, tp = 1, pp = 1;
  int zero = 0;
  int microbatches = 1;   // m: gradient-accumulation steps / pipeline micro-batches
  int micro_batch = 1;    // sequences per micro-batch
  int chunks = 1;         // v, interleaved schedule
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  Schedule schedule = Schedule::k1F1B;
  CompressionSpec compression;
};

struct StepOptions {
  double weight_bytes = 2, grad_bytes = 2, optimizer_bytes = 12, activation_bytes = 2;
  double overlap = 1.0;  // share of the hideable backward time DP communication can use
};

struct StepEstimate {
  Layout layout;
  Estimates items;  // every term, in the order of the model above, then memory and throughput
  double step_seconds = 0;
  double memory_bytes = 0;
  bool fits = false;
  double tokens_per_second = 0;
  double mfu = 0;  // model FLOP utilisation (useful FLOP, without recomputation, over peak)
};

// Throws InvalidArgument naming the field and its valid range: dp x tp x pp != world, tp not
// dividing heads (or kv-heads / tp uneven), pp larger than layers, interleaving that does not
// divide, zero outside 0..3, ...
void validate_layout(const ModelSpec& model, const ClusterSpec& cluster, const Layout& layout);

// The part of validate_layout that needs no cluster: tp divides the heads (and fits the KV
// heads), pp is at most the layer count.
void validate_model_split(const ModelSpec& model, int tp, int pp);

StepEstimate estimate_step(const ModelSpec& model, const ClusterSpec& cluster, const Layout& layout,
                           const StepOptions& options = {});

}  // namespace braid::plan
