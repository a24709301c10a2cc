#include "braid/torch/moe_layer.h"

#include <algorithm>

namespace braid::torch {

using ::torch::Tensor;

namespace {

parallel::MoeLayerSpec dispatcher_spec(const MoeLayerOptions& o) {
  return {.experts = o.experts, .top_k = o.top_k, .hidden = o.hidden, .dtype = DType::kF32,
          .capacity_factor = o.capacity_factor, .dropless = o.dropless};
}

// Offsets of each local expert's rows in the expert buffer (chunks = 1: one run per expert).
std::vector<std::int64_t> expert_offsets(const parallel::MoeDispatchPlan& plan) {
  std::vector<std::int64_t> offsets{0};
  for (std::int64_t n : plan.received_per_local_expert) offsets.push_back(offsets.back() + n);
  return offsets;
}

}  // namespace

MoeLayerImpl::MoeLayerImpl(Communicator& ep_group, const MoeLayerOptions& options)
    : options_(options), ep_size_(ep_group.size()) {
  // First: the agreement and the checks, collective, before anything depends on E / ep.
  dispatcher_ = std::make_unique<parallel::MoeDispatcher>(ep_group, dispatcher_spec(options));
  gate = register_module("gate", TopKGate(options.hidden, options.experts, options.top_k));
  int local = options.experts / ep_size_;
  experts = register_module(
      "experts", MoeExperts(options.experts, dispatcher_->first_local_expert(), local, options.hidden, options.ffn));
  reset_stats();
}

void MoeLayerImpl::reset_stats() {
  stats_ = MoeLayerStats{};
  stats_.routed_per_expert.assign(static_cast<std::size_t>(options_.experts), 0);
}

bool MoeLayerImpl::is_expert_parameter(const std::string& name) {
  return name.rfind("experts.", 0) == 0 || name.find(".experts.") != std::string::npos;
}

Tensor MoeLayerImpl::forward(const Tensor& x) {
  Tensor tokens = x.reshape({-1, options_.hidden});
  MoeGateOutput routed = gate->forward(tokens);
  auto plan = std::make_shared<parallel::MoeDispatchPlan>(
      dispatcher_->plan(routed.expert_ids, tokens.size(0), std::max(1, options_.chunks)));
  // Statistics count training calls only (an evaluation pass does not skew the load figures).
  MoeExchangeContext context{.dispatcher = dispatcher_.get(), .plan = plan,
                             .clock = is_training() ? &stats_.exchange : nullptr};

  Tensor out;
  if (plan->chunks() > 1) {
    out = moe_pipelined(tokens, routed.gates, *experts, context);
  } else {
    Tensor expert_input = moe_dispatch(tokens, context);
    std::vector<std::int64_t> offsets = expert_offsets(*plan);
    Tensor expert_output = experts->forward(expert_input, offsets);
    out = moe_combine(expert_output, routed.gates, context);
  }

  last_aux_ = routed.aux_loss;
  last_z_ = routed.z_loss;
  auxiliary_loss_ = options_.aux_loss_coef * last_aux_;
  if (options_.z_loss_coef != 0) auxiliary_loss_ = auxiliary_loss_ + options_.z_loss_coef * last_z_;

  if (is_training()) count(plan->routing);
  return out.reshape(x.sizes());
}

void MoeLayerImpl::count(const parallel::MoeRouting& r) {
  ++stats_.calls;
  stats_.tokens += r.tokens;
  stats_.dropped_tokens += r.dropped_tokens;
  stats_.dropped_choices += r.dropped_choices;
  for (std::size_t e = 0; e < r.routed_per_expert.size(); ++e) stats_.routed_per_expert[e] += r.routed_per_expert[e];
}

}  // namespace braid::torch
