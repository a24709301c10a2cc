// Bytes per optimizer step on each mesh axis (dp, tp, pp) for braid-train's tensor-parallel GPT:
// the planner's side of the check "bytes moved per step on each axis equal braid-plan's formulas
// within 1%" (docs/planner.md, "Training traffic"), so the formulas can then be trusted for
// layouts this machine cannot run.
//
// What is counted is "algorithm bytes" per rank, as everywhere in comm_volume.h: an allreduce of
// S bytes over n ranks is 2 (n-1)/n S, an allgather or reduce-scatter of a full tensor S is
// (n-1)/n S, a point-to-point message its own bytes. Every value is the mean over all
// dp x tp x pp ranks of what one rank sends in one optimizer step. All tensors are fp32 (4 bytes).
//
// The model (braid-train's GPT, pre-norm, Sequential [embeddings, block0..blockL-1, ln, head]):
//   token embedding   vocab-parallel: Vp x h, Vp = vocab padded up to a multiple of tp   (sharded)
//   position emb.     t x h                                                              (replicated)
//   block (x L)       ln1 2h, qkv 3h x h + 3h (column), proj h x h (row) + bias h,
//                     ln2 2h, up 4h x h + 4h (column), down h x 4h (row) + bias h
//                     sharded 12h^2 + 7h, replicated 6h (LayerNorms, row-parallel biases)
//   final LayerNorm   2h                                                                 (replicated)
//   head              Vp x h + Vp (column)                                                (sharded)
//   => sharded P_s = 2 Vp h + Vp + L (12 h^2 + 7 h), replicated P_r = t h + 6 h L + 2 h.
//
// Per axis, with S = b t h x 4 bytes (one activation of a micro-batch), M micro-batches per step:
//
//   dp  one allreduce of each rank's local gradients per step. A rank holds its stage's sharded
//       parameters / tp and its replicated ones in full; summed over the pp x tp model-parallel
//       ranks that is P_s + tp P_r whatever the stage partition, so
//         dp = dp_allreduce_bytes((P_s + tp P_r) / (pp tp), 4, dp) = 2 (dp-1)/dp x 4 x (P_s + tp P_r) / (pp tp).
//
//   tp  per micro-batch, on the stage that holds each layer (every rank of the TP group sends the
//       same, so the mean over ranks is the sum over layers / pp):
//         embedding   tp_row_layer_bytes(S): forward allreduce (with SP: forward reduce-scatter
//                     and backward allgather, the same total)
//         block       tp_layer_bytes(S): 2 forward + 2 backward allreduces (with SP: 4 allgathers
//                     + 4 reduce-scatters, the same total)
//         head        tp_column_layer_bytes(S): backward allreduce of its input gradient (with SP:
//                     forward allgather + backward reduce-scatter)
//         loss        vocab-parallel cross-entropy, forward: ring_allreduce_bytes(b t 4) (the max)
//                     + ring_allreduce_bytes(2 b t 4) (sum of exponentials and the target logit)
//       and with SP once per step ring_allreduce_bytes(4 P_r, tp) of the replicated parameters'
//       gradients (their inputs are sequence-sharded, so each rank holds a partial sum):
//         tp = M x (embedding + L x block + head + loss) / pp  [+ 2 (tp-1)/tp x 4 P_r / pp with SP].
//
//   pp  per micro-batch one activation forward and one gradient backward at each of the pp v - 1
//       boundaries between consecutive virtual stages; the boundary tensor is pp_bytes' (S, or
//       S / tp with SP):
//         pp = 2 (pp v - 1) M x boundary / pp.
//
// Each is partition-free: it does not depend on which layers balanced_layer_partition gives each
// stage, because every layer lives on exactly one stage.
#pragma once

#include <string_view>

#include "braid/plan/estimate.h"

namespace braid::plan {

// braid-train's GPT. REQUIRES: every field >= 1, heads divides width.
struct GptShape {
  int vocab = 96;  // tokens (braid-train: the distinct bytes of its corpus)
  int width = 128;
  int layers = 6;
  int heads = 4;
  int context = 64;
};

// braid-train's presets: "gpt-tiny" (width 128, 6 layers, 4 heads, context 64, its default GPT,
// about 1.2 M parameters) and "gpt-small" (width 512, 8 layers, 8 heads, context 128, about 25 M).
// The vocabulary is left at `vocab`. Throws InvalidArgument naming the accepted presets.
GptShape gpt_preset(std::string_view name, int vocab);

// REQUIRES (InvalidArgument naming the field otherwise): every count >= 1; tp divides heads and
// width; pp x chunks <= layers + 3 (the Sequential's layers); chunks = 1 when pp = 1; with
// sequence parallelism tp divides micro_batch x context (the tokens a micro-batch splits).
struct TrainingLayout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int chunks = 1;        // virtual stages per pipeline stage (interleaved schedule)
  int microbatches = 1;  // per optimizer step per pipeline (also with pp = 1)
  int micro_batch = 1;   // sequences per micro-batch (b)
  bool sequence_parallel = false;
};

struct TrainingTraffic {
  // Mean over all dp x tp x pp ranks of the bytes one rank sends per optimizer step.
  double dp_bytes = 0;
  double tp_bytes = 0;
  double pp_bytes = 0;
  // The parameter counts they used.
  double padded_vocab = 0;       // Vp
  double sharded_params = 0;     // P_s (tensor-parallel layers, whole)
  double replicated_params = 0;  // P_r (LayerNorms, row-parallel biases, position embedding)
  double total_params = 0;       // P_s + P_r: the model's parameters (with the vocabulary padding)
  double params_per_rank = 0;    // (P_s + tp P_r) / (pp tp): mean local parameters per rank
  // Every term with its formula and numbers (names in training_traffic.cc), for braid-plan.
  Estimates params, dp_terms, tp_terms, pp_terms;
};

TrainingTraffic training_traffic(const GptShape& model, const TrainingLayout& layout);

}  // namespace braid::plan
