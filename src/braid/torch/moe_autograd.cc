#include "braid/torch/moe_autograd.h"

#include <chrono>

namespace braid::torch {
namespace {

using ::torch::Tensor;
using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

// The autograd context stores IValues: the shared exchange context rides in a capsule (an
// IValue built from a CustomClassHolder pointer would demand a TorchScript-registered class).
struct ContextCapsule : ::torch::CustomClassHolder {
  explicit ContextCapsule(MoeExchangeContext c) : context(std::move(c)) {}
  MoeExchangeContext context;
};

void keep(AutogradContext* ctx, const MoeExchangeContext& context) {
  ctx->saved_data["moe"] = c10::IValue::make_capsule(c10::make_intrusive<ContextCapsule>(context));
}

const MoeExchangeContext& kept(AutogradContext* ctx) {
  return static_cast<ContextCapsule*>(ctx->saved_data["moe"].toCapsule().get())->context;
}

// Runs one exchange, adding its time to the layer's clock.
template <typename Exchange>
void timed(const MoeExchangeContext& context, Exchange&& exchange) {
  auto start = std::chrono::steady_clock::now();
  exchange();
  if (context.clock != nullptr) {
    context.clock->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

Tensor rows_like(const Tensor& like, std::int64_t rows) { return ::torch::empty({rows, like.size(-1)}, like.options()); }

struct Dispatch : public ::torch::autograd::Function<Dispatch> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const MoeExchangeContext& context) {
    keep(ctx, context);
    Tensor tokens = x.contiguous();
    Tensor expert_input = rows_like(tokens, context.plan->expert_rows());
    timed(context, [&] { context.dispatcher->dispatch(*context.plan, tokens.data_ptr(), expert_input.data_ptr()); });
    return expert_input;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const MoeExchangeContext& context = kept(ctx);
    Tensor grad = grads[0].contiguous();
    Tensor grad_tokens = rows_like(grad, context.plan->routing.tokens);
    timed(context, [&] { context.dispatcher->undispatch(*context.plan, grad.data_ptr(), grad_tokens.data_ptr()); });
    return {grad_tokens, Tensor()};
  }
};

struct Combine : public ::torch::autograd::Function<Combine> {
  static Tensor forward(AutogradContext* ctx, const Tensor& expert_output, const Tensor& gates,
                        const MoeExchangeContext& context) {
    keep(ctx, context);
    const parallel::MoeDispatchPlan& plan = *context.plan;
    std::int64_t tokens = plan.routing.tokens, k = plan.routing.top_k;
    Tensor rows = expert_output.contiguous();
    Tensor choice_rows = rows_like(rows, tokens * k);
    timed(context, [&] { context.dispatcher->return_rows(plan, rows.data_ptr(), choice_rows.data_ptr()); });
    Tensor per_choice = choice_rows.view({tokens, k, rows.size(-1)});
    ctx->save_for_backward({per_choice, gates});
    return moe_gate_weighted_sum(per_choice, gates);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const MoeExchangeContext& context = kept(ctx);
    variable_list saved = ctx->get_saved_variables();
    const Tensor& per_choice = saved[0];
    const Tensor& gates = saved[1];
    Tensor grad_out = grads[0].contiguous();
    MoeWeightedSumGrads grad = moe_gate_weighted_sum_backward(per_choice, gates, grad_out);
    Tensor grad_expert = rows_like(grad_out, context.plan->expert_rows());
    timed(context, [&] {
      context.dispatcher->dispatch_choices(*context.plan, grad.per_choice.data_ptr(), grad_expert.data_ptr());
    });
    return {grad_expert, grad.gates, Tensor()};
  }
};

}  // namespace

Tensor moe_gate_weighted_sum(const Tensor& per_choice, const Tensor& gates) {
  // j in order, from the first choice: the dispatcher's combine order (moe_dispatcher.h).
  Tensor out = per_choice.select(1, 0) * gates.select(1, 0).unsqueeze(-1);
  for (std::int64_t j = 1; j < per_choice.size(1); ++j) {
    out = out + per_choice.select(1, j) * gates.select(1, j).unsqueeze(-1);
  }
  return out;
}

MoeWeightedSumGrads moe_gate_weighted_sum_backward(const Tensor& per_choice, const Tensor& gates,
                                                   const Tensor& grad_out) {
  return {(per_choice * grad_out.unsqueeze(1)).sum(-1), (gates.unsqueeze(-1) * grad_out.unsqueeze(1)).contiguous()};
}

Tensor moe_dispatch(const Tensor& x, const MoeExchangeContext& context) { return Dispatch::apply(x, context); }

Tensor moe_combine(const Tensor& expert_output, const Tensor& gates, const MoeExchangeContext& context) {
  return Combine::apply(expert_output, gates, context);
}

}  // namespace braid::torch
