// Memory per device for training: model states (weights, gradients, optimizer) under DP, ZeRO,
// TP and PP, and activations with and without recomputation.
//
// Model states (ZeRO paper, Rajbhandari et al. 2020): mixed-precision Adam keeps 2 bytes of
// fp16/bf16 weights, 2 bytes of gradients and K = 12 bytes of optimizer state (fp32 master
// weights, momentum, variance) per parameter: 16 Phi in all. TP and PP split every term by
// tp x pp; ZeRO-1 divides the optimizer state by dp, ZeRO-2 also the gradients, ZeRO-3 also the
// weights (seeds/004: weight_mem ~ params x bytes / shards).
//
// Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models"), bytes per layer and micro-batch with 16-bit activations, s = seq, b = micro-batch,
// h = hidden, a = heads, t = tp:
//   no recomputation        s b h (10 + 24/t + 5 a s/(h t))   (34/t + 5as/(ht) with sequence parallelism)
//   selective recomputation s b h (10 + 24/t)                  (34/t with sequence parallelism)
//   full recomputation      2 s b h                            (2 s b h / t with sequence parallelism)
// The first pipeline stage holds layers/p of them for min(p, m) micro-batches under 1F1B
// (m under GPipe, x (1 + (p-1)/(p v)) interleaved).
#pragma once

#include <string_view>

#include "braid/plan/bubble.h"
#include "braid/plan/estimate.h"

namespace braid::plan {

enum class Recompute { kNone, kSelective, kFull };
const char* recompute_name(Recompute recompute);  // "none", "selective", "full"
Recompute parse_recompute(std::string_view name, std::string_view field = "recompute");

// weight_mem = params x bytes / shards (seeds/004).
Estimate weight_memory(double params, double bytes, int shards);

struct ModelStateInput {
  double params = 7e9;
  double weight_bytes = 2;
  double grad_bytes = 2;
  double optimizer_bytes = 12;  // Adam, mixed precision: fp32 master + m + v
  int dp = 1, tp = 1, pp = 1;
  int zero = 0;
};
// weights, gradients, optimizer and their sum ("model_state_bytes"), per device.
Estimates model_state_memory(const ModelStateInput& input);

struct ActivationInput {
  double seq = 2048, micro_batch = 1, hidden = 4096, heads = 32;
  int layers = 32;
  int tp = 1, pp = 1, microbatches = 1, chunks = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  Schedule schedule = Schedule::k1F1B;
  double bytes = 2;  // activation precision; the paper's constants are for 2
};
// "activation_bytes_per_layer" and "activation_bytes" (the first stage's peak).
Estimates activation_memory(const ActivationInput& input);

}  // namespace braid::plan
