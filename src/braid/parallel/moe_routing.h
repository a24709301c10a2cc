// MoE routing: from a gate's top-k choices (per token: k expert ids) to what each expert gets
// from this rank, which choices are dropped, and where each kept choice sits in the buffer that
// goes to the all-to-all. Pure arithmetic, no communicator (tested alone, like patterns/).
//
//   MoeRoutingOptions options{.experts = 8, .ep_size = 4, .top_k = 2, .capacity_factor = 1.25};
//   MoeRouting r = route_tokens(expert_ids, tokens, options);   // ids: tokens x top_k, row-major
//   r.kept_per_expert[e], r.position_of_choice[t * k + j] (-1: dropped), r.capacity
//
// Capacity (GShard, Switch Transformer): each expert takes at most
//   C = ceil(capacity_factor x T x k / E)
// of this rank's T tokens (T x k / E is what a perfectly balanced gate sends it). Dropless mode
// has no limit (C = T: a token names an expert at most once). C is computed from this rank's own
// token count: as in GShard, capacity is per group of tokens (a rank's local batch), which
// makes every decision a function of this rank's routing alone, and so the same whatever the EP
// size: EP = 4 drops exactly what one process holding all experts drops for the same tokens.
//
// Drop rule (GShard's priority): all first choices come before all second choices, and within
// one choice rank tokens go in token order. An expert's slots are filled in that order; the
// choices that find it full are dropped (a dropped choice contributes nothing to the token's
// output; the model's residual connection carries the token on). Deterministic: every rank, and
// any reference computing it, gets the same set.
//
// Experts are split evenly over the EP group: rank r hosts experts [r E/ep, (r+1) E/ep).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace braid::parallel {

struct MoeRoutingOptions {
  int experts = 0;  // E, over the whole EP group; divisible by ep_size
  int ep_size = 1;  // ranks of the EP group
  int top_k = 1;    // choices per token, 1..experts (top-1: Switch; top-2: GShard)
  double capacity_factor = 1.0;  // > 0 and finite; unused when dropless
  bool dropless = false;         // no capacity: nothing is dropped (Megablocks, Megatron-Core dropless)

  int local_experts() const { return experts / ep_size; }
};

// What is wrong with options or gating output, as data: a collective caller reports it to its
// peers before throwing (moe_dispatcher.h), a local caller throws it (route_tokens).
struct MoeRoutingProblem {
  enum class Kind : std::int64_t { kNone = 0, kOptions = 1, kExpertOutOfRange = 2, kRepeatedExpert = 3, kShape = 4 };
  Kind kind = Kind::kNone;
  std::int64_t token = -1;  // the offending token (expert-id problems)
  std::int64_t slot = -1;   // its choice (0 = first)
  std::int64_t value = -1;  // the expert id it names
  std::string detail;       // the sentence for the error message
};

// The options' own problem, if any: experts < 1, ep_size < 1, experts not divisible by ep_size,
// top_k outside [1, experts], capacity_factor <= 0 or not finite (unless dropless).
std::optional<MoeRoutingProblem> find_options_problem(const MoeRoutingOptions& options);
// The first problem of the gating output (after the options' own): expert_ids.size() !=
// tokens x top_k, tokens < 0, an id outside [0, experts), one token naming an expert twice.
std::optional<MoeRoutingProblem> find_routing_problem(std::span<const std::int32_t> expert_ids, std::int64_t tokens,
                                                      const MoeRoutingOptions& options);

// The per-expert capacity C for `tokens` tokens (above); dropless: tokens.
std::int64_t expert_capacity(std::int64_t tokens, const MoeRoutingOptions& options);

struct MoeRouting {
  std::int64_t tokens = 0;
  int top_k = 1;
  int experts = 0;
  int ep_size = 1;
  std::int64_t capacity = 0;
  std::vector<std::int64_t> routed_per_expert;  // choices naming each expert, before drops (load histogram)
  std::vector<std::int64_t> kept_per_expert;    // of those, the ones kept: min(routed, capacity)
  // Per choice t x top_k + j: its slot in its expert (0 = first served), -1 if dropped.
  std::vector<std::int64_t> position_of_choice;
  std::int64_t dropped_choices = 0;
  std::int64_t dropped_tokens = 0;  // tokens whose every choice was dropped

  std::int64_t kept_choices() const { return tokens * top_k - dropped_choices; }
  int local_experts() const { return experts / ep_size; }
  // Kept choices this rank sends to each EP rank (the experts it hosts, summed).
  std::vector<std::int64_t> kept_per_rank() const;
};

// Routes this rank's tokens. expert_ids: tokens x top_k, row-major (token t's choice j at
// t x top_k + j, j = 0 the gate's first choice). InvalidArgument (op "moe routing") naming the
// problem of find_options_problem / find_routing_problem.
MoeRouting route_tokens(std::span<const std::int32_t> expert_ids, std::int64_t tokens,
                        const MoeRoutingOptions& options);

}  // namespace braid::parallel
