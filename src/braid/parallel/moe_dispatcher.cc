// MoeDispatcher's set-up half: agreeing on the layer and planning one call (routing and the
// counts exchange). The exchanges themselves are in moe_dispatch_exchange.cc.
#include "braid/parallel/moe_dispatcher.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/parallel/moe_agreement.h"

namespace braid::parallel {
namespace {

constexpr const char* kOp = "moe dispatch";

// What each rank sends every peer in plan()'s alltoall: its chunk count, its gating output's
// problem (so a bad input is an error on every rank, not a hang), then the rows it sends to
// each of that peer's experts.
enum Header : std::size_t { kChunks, kProblem, kToken, kSlot, kValue, kIds, kTokens, kHeaderSize };

std::string describe_problem(const std::int64_t* h, int rank, int experts, int top_k) {
  using Kind = MoeRoutingProblem::Kind;
  switch (static_cast<Kind>(h[kProblem])) {
    case Kind::kExpertOutOfRange:
      return fmt::format("rank {}'s gating output: token {} choice {} names expert {}, outside [0, {})", rank,
                         h[kToken], h[kSlot], h[kValue], experts);
    case Kind::kRepeatedExpert:
      return fmt::format("rank {}'s gating output: token {} names expert {} twice (choice {} repeats an earlier one)",
                         rank, h[kToken], h[kValue], h[kSlot]);
    default:
      return fmt::format("rank {}'s gating output: {} expert ids for {} tokens x top-{}: expected tokens x top-k", rank,
                         h[kIds], h[kTokens], top_k);
  }
}

}  // namespace

MoeDispatcher::MoeDispatcher(Communicator& ep_group, const MoeLayerSpec& spec)
    : group_(ep_group),
      spec_(spec),
      options_{.experts = spec.experts, .ep_size = ep_group.size(), .top_k = spec.top_k,
               .capacity_factor = spec.capacity_factor, .dropless = spec.dropless} {
  const AgreedField fields[] = {{"experts", spec.experts},
                                {"top_k", spec.top_k},
                                {"hidden", spec.hidden},
                                {"dtype", static_cast<std::int64_t>(spec.dtype)},
                                agreed_double("capacity_factor", spec.dropless ? 0.0 : spec.capacity_factor),
                                {"dropless", spec.dropless ? 1 : 0}};
  agree_on_fields(group_, fields, "MoeDispatcher");
  // From here every rank holds the same spec, so every rank refuses the same way.
  const ErrorContext ctx{.rank = group_.rank(), .op = "MoeDispatcher"};
  if (auto problem = find_options_problem(options_)) throw InvalidArgument(ctx, problem->detail);
  if (spec.hidden < 1) throw InvalidArgument(ctx, fmt::format("hidden must be >= 1, got {}", spec.hidden));
  if (spec.dtype != DType::kF32 && spec.dtype != DType::kF64) {
    throw InvalidArgument(ctx, fmt::format("dtype {}: the combine's weighted sum is computed in f32 or f64 only",
                                           dtype_name(spec.dtype)));
  }
}

MoeDispatchPlan MoeDispatcher::plan(std::span<const std::int32_t> expert_ids, std::int64_t tokens, int chunks) {
  const int ep = group_.size();
  const int local = options_.local_experts();
  const auto message = static_cast<std::int64_t>(kHeaderSize) + local;
  const std::optional<MoeRoutingProblem> problem = find_routing_problem(expert_ids, tokens, options_);
  MoeDispatchPlan plan;
  if (!problem) plan.routing = route_tokens(expert_ids, tokens, options_);
  std::vector<std::int64_t> send(static_cast<std::size_t>(message * ep), 0), recv(send.size());
  for (int p = 0; p < ep; ++p) {
    std::int64_t* h = send.data() + p * message;
    h[kChunks] = chunks;
    h[kIds] = static_cast<std::int64_t>(expert_ids.size());
    h[kTokens] = tokens;
    if (problem) {
      h[kProblem] = static_cast<std::int64_t>(problem->kind);
      h[kToken] = problem->token, h[kSlot] = problem->slot, h[kValue] = problem->value;
      continue;
    }
    for (int le = 0; le < local; ++le) h[kHeaderSize + le] = plan.routing.kept_per_expert[static_cast<std::size_t>(p * local + le)];
  }
  alltoall(group_, send.data(), recv.data(), message, DType::kI64);
  check_peer_headers(recv, message, chunks);
  std::vector<std::int64_t> incoming(static_cast<std::size_t>(ep) * local);
  plan.received_per_local_expert.assign(static_cast<std::size_t>(local), 0);
  for (int p = 0; p < ep; ++p) {
    for (int le = 0; le < local; ++le) {
      const std::int64_t rows = recv[static_cast<std::size_t>(p * message) + kHeaderSize + static_cast<std::size_t>(le)];
      incoming[static_cast<std::size_t>(p * local + le)] = rows;
      plan.received_per_local_expert[static_cast<std::size_t>(le)] += rows;
    }
  }
  plan.layout = MoeExchangeLayout(plan.routing.kept_per_expert, incoming, ep, chunks);
  index_send_rows(plan, expert_ids);
  return plan;
}

// Every rank holds every peer's header after the alltoall, so all raise the same error.
void MoeDispatcher::check_peer_headers(std::span<const std::int64_t> recv, std::int64_t message, int chunks) const {
  auto header = [&](int p) { return recv.data() + p * message; };
  const ErrorContext ctx{.rank = group_.rank(), .op = kOp};
  bool same_chunks = true;
  std::string chunk_counts;
  for (int p = 0; p < group_.size(); ++p) {
    same_chunks = same_chunks && header(p)[kChunks] == chunks;
    chunk_counts += fmt::format("{}rank {} has {}", p == 0 ? "" : ", ", p, header(p)[kChunks]);
  }
  if (!same_chunks) throw Mismatch(ctx, fmt::format("ranks disagree on chunks: {}", chunk_counts));
  if (chunks < 1) throw InvalidArgument(ctx, fmt::format("chunks must be >= 1, got {}", chunks));
  for (int p = 0; p < group_.size(); ++p) {
    if (header(p)[kProblem] != 0) throw InvalidArgument(ctx, describe_problem(header(p), p, spec_.experts, spec_.top_k));
  }
}

// The send row of every kept choice, and its inverses.
void MoeDispatcher::index_send_rows(MoeDispatchPlan& plan, std::span<const std::int32_t> expert_ids) {
  const MoeRouting& r = plan.routing;
  plan.send_row_of_choice.assign(r.position_of_choice.size(), -1);
  plan.choice_of_send_row.assign(static_cast<std::size_t>(plan.layout.send_rows()), 0);
  plan.token_of_send_row.assign(plan.choice_of_send_row.size(), 0);
  for (std::size_t choice = 0; choice < r.position_of_choice.size(); ++choice) {
    const std::int64_t position = r.position_of_choice[choice];
    if (position < 0) continue;
    const std::int64_t row = plan.layout.send_row(expert_ids[choice], position);
    plan.send_row_of_choice[choice] = row;
    plan.choice_of_send_row[static_cast<std::size_t>(row)] = static_cast<std::int64_t>(choice);
    plan.token_of_send_row[static_cast<std::size_t>(row)] = static_cast<std::int64_t>(choice) / r.top_k;
  }
}

void MoeDispatcher::check_plan(const MoeDispatchPlan& plan, const char* op) const {
  const ErrorContext ctx{.rank = group_.rank(), .op = op};
  if (plan.layout.ep_size() != group_.size() || plan.layout.local_experts() != options_.local_experts() ||
      plan.routing.top_k != spec_.top_k) {
    throw InvalidArgument(ctx, fmt::format("the plan was made for {} ranks x {} local experts, top-{}; this "
                                           "dispatcher has {} x {}, top-{}",
                                           plan.layout.ep_size(), plan.layout.local_experts(), plan.routing.top_k,
                                           group_.size(), options_.local_experts(), spec_.top_k));
  }
}

}  // namespace braid::parallel
