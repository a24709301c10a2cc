#include "braid/parallel/moe_routing.h"

#include <fmt/format.h>

#include <cmath>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

using Kind = MoeRoutingProblem::Kind;

MoeRoutingProblem options_problem(std::string detail) { return {.kind = Kind::kOptions, .detail = std::move(detail)}; }

}  // namespace

std::optional<MoeRoutingProblem> find_options_problem(const MoeRoutingOptions& o) {
  if (o.experts < 1) return options_problem(fmt::format("experts must be >= 1, got {}", o.experts));
  if (o.ep_size < 1) return options_problem(fmt::format("the EP group size must be >= 1, got {}", o.ep_size));
  if (o.experts % o.ep_size != 0) {
    return options_problem(fmt::format("experts ({}) must be divisible by the EP group size ({}): experts are split "
                                       "evenly over its ranks",
                                       o.experts, o.ep_size));
  }
  if (o.top_k < 1 || o.top_k > o.experts) {
    return options_problem(fmt::format("top_k must be in [1, experts = {}], got {}", o.experts, o.top_k));
  }
  if (!o.dropless && !(std::isfinite(o.capacity_factor) && o.capacity_factor > 0)) {
    return options_problem(fmt::format("capacity factor must be > 0 and finite, got {} (dropless mode takes none)",
                                       o.capacity_factor));
  }
  return std::nullopt;
}

std::optional<MoeRoutingProblem> find_routing_problem(std::span<const std::int32_t> ids, std::int64_t tokens,
                                                      const MoeRoutingOptions& o) {
  if (auto problem = find_options_problem(o)) return problem;
  const std::int64_t k = o.top_k;
  if (tokens < 0 || static_cast<std::int64_t>(ids.size()) != tokens * k) {
    return MoeRoutingProblem{.kind = Kind::kShape,
                             .value = static_cast<std::int64_t>(ids.size()),
                             .detail = fmt::format("{} expert ids for {} tokens x top-{}: expected {}", ids.size(),
                                                   tokens, k, tokens < 0 ? 0 : tokens * k)};
  }
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int32_t e = ids[static_cast<std::size_t>(t * k + j)];
      if (e < 0 || e >= o.experts) {
        return MoeRoutingProblem{.kind = Kind::kExpertOutOfRange, .token = t, .slot = j, .value = e,
                                 .detail = fmt::format("token {} choice {} names expert {}, outside [0, {})", t, j, e,
                                                       o.experts)};
      }
      for (std::int64_t i = 0; i < j; ++i) {
        if (ids[static_cast<std::size_t>(t * k + i)] == e) {
          return MoeRoutingProblem{.kind = Kind::kRepeatedExpert, .token = t, .slot = j, .value = e,
                                   .detail = fmt::format("token {} names expert {} twice (choices {} and {}): top-k "
                                                         "choices are distinct experts",
                                                         t, e, i, j)};
        }
      }
    }
  }
  return std::nullopt;
}

std::int64_t expert_capacity(std::int64_t tokens, const MoeRoutingOptions& o) {
  if (o.dropless) return tokens;
  // Computed in double, once, the same way on every rank: the result is a pure function of
  // (tokens, options), whatever rounding the product has.
  return static_cast<std::int64_t>(std::ceil(o.capacity_factor * static_cast<double>(tokens) * o.top_k / o.experts));
}

std::vector<std::int64_t> MoeRouting::kept_per_rank() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(ep_size), 0);
  const int per_rank = local_experts();
  for (int e = 0; e < experts; ++e) out[static_cast<std::size_t>(e / per_rank)] += kept_per_expert[static_cast<std::size_t>(e)];
  return out;
}

MoeRouting route_tokens(std::span<const std::int32_t> ids, std::int64_t tokens, const MoeRoutingOptions& o) {
  if (auto problem = find_routing_problem(ids, tokens, o)) throw InvalidArgument({.op = "moe routing"}, problem->detail);
  MoeRouting r{.tokens = tokens, .top_k = o.top_k, .experts = o.experts, .ep_size = o.ep_size,
               .capacity = expert_capacity(tokens, o)};
  const auto experts = static_cast<std::size_t>(o.experts);
  r.routed_per_expert.assign(experts, 0);
  r.kept_per_expert.assign(experts, 0);
  r.position_of_choice.assign(ids.size(), -1);
  const std::int64_t k = o.top_k;
  // GShard's priority: choice j of every token before choice j + 1 of any, tokens in order.
  for (std::int64_t j = 0; j < k; ++j) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const auto choice = static_cast<std::size_t>(t * k + j);
      const auto e = static_cast<std::size_t>(ids[choice]);
      const std::int64_t position = r.routed_per_expert[e]++;
      if (position < r.capacity) {
        r.position_of_choice[choice] = position;
        ++r.kept_per_expert[e];
      } else {
        ++r.dropped_choices;
      }
    }
  }
  for (std::int64_t t = 0; t < tokens; ++t) {
    bool any_kept = false;
    for (std::int64_t j = 0; j < k; ++j) any_kept = any_kept || r.position_of_choice[static_cast<std::size_t>(t * k + j)] >= 0;
    if (!any_kept) ++r.dropped_tokens;
  }
  return r;
}

}  // namespace braid::parallel
