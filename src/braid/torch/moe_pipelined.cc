#include "braid/torch/moe_pipelined.h"

#include <chrono>
#include <vector>

namespace braid::torch {
namespace {

using ::torch::Tensor;
using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

// What the backward needs besides tensors: the exchange context, the experts, each chunk's
// expert offsets (its input rows are saved as tensors).
struct PipelineCapsule : ::torch::CustomClassHolder {
  MoeExchangeContext context;
  MoeExpertsImpl* experts = nullptr;
  std::vector<std::vector<std::int64_t>> offsets;
};

PipelineCapsule& kept(AutogradContext* ctx) {
  return *static_cast<PipelineCapsule*>(ctx->saved_data["moe"].toCapsule().get());
}

Tensor rows_of(const void* data, std::int64_t rows, std::int64_t hidden) {
  return ::torch::from_blob(const_cast<void*>(data), {rows, hidden}, ::torch::kFloat32);
}

void add_time(const MoeExchangeContext& context, std::chrono::steady_clock::time_point start) {
  if (context.clock == nullptr) return;
  context.clock->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Pipelined : public ::torch::autograd::Function<Pipelined> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& gates, MoeExpertsImpl* experts,
                        const MoeExchangeContext& context) {
    auto capsule = c10::make_intrusive<PipelineCapsule>();
    capsule->context = context;
    capsule->experts = experts;
    Tensor tokens = x.contiguous(), weights = gates.contiguous();
    Tensor out = ::torch::empty_like(tokens);
    std::vector<Tensor> inputs;
    auto start = std::chrono::steady_clock::now();
    context.dispatcher->run(*context.plan, tokens.data_ptr(), weights.data_ptr<float>(),
                            [&](const parallel::MoeExpertChunk& c) {
                              Tensor in = rows_of(c.input, c.rows, c.hidden).clone();
                              capsule->offsets.emplace_back(c.expert_offsets.begin(), c.expert_offsets.end());
                              ::torch::NoGradGuard no_graph;  // recomputed in backward
                              rows_of(c.output, c.rows, c.hidden).copy_(experts->forward(in, capsule->offsets.back()));
                              inputs.push_back(in);
                            },
                            out.data_ptr());
    add_time(context, start);  // the whole pipelined layer: exchange with the experts' compute inside
    inputs.push_back(weights);
    ctx->save_for_backward(inputs);
    ctx->saved_data["moe"] = c10::IValue::make_capsule(capsule);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    PipelineCapsule& capsule = kept(ctx);
    const parallel::MoeDispatchPlan& plan = *capsule.context.plan;
    parallel::MoeDispatcher& moe = *capsule.context.dispatcher;
    variable_list saved = ctx->get_saved_variables();
    Tensor gates = saved.back();
    saved.pop_back();
    Tensor y;
    {
      ::torch::AutoGradMode with_graph(true);  // a backward runs without one
      std::vector<Tensor> outputs;
      for (std::size_t c = 0; c < saved.size(); ++c) {
        saved[c] = saved[c].detach().requires_grad_(true);
        outputs.push_back(capsule.experts->forward(saved[c], capsule.offsets[c]));
      }
      y = ::torch::cat(outputs).contiguous();
    }
    std::int64_t tokens = plan.routing.tokens, k = plan.routing.top_k, hidden = y.size(-1);
    Tensor grad_out = grads[0].contiguous();
    Tensor per_choice = ::torch::empty({tokens, k, hidden}, y.options());
    Tensor grad_y = ::torch::empty_like(y);
    Tensor grad_choices = (gates.unsqueeze(-1) * grad_out.unsqueeze(1)).contiguous();
    auto start = std::chrono::steady_clock::now();
    Tensor values = y.detach();
    moe.return_rows(plan, values.data_ptr(), per_choice.data_ptr());
    moe.dispatch_choices(plan, grad_choices.data_ptr(), grad_y.data_ptr());
    add_time(capsule.context, start);
    Tensor grad_gates = (per_choice * grad_out.unsqueeze(1)).sum(-1);
    ::torch::autograd::backward({y}, {grad_y});  // into the experts' parameters and the saved inputs
    std::vector<Tensor> input_grads;
    for (const Tensor& in : saved) input_grads.push_back(in.grad().defined() ? in.grad() : ::torch::zeros_like(in));
    Tensor grad_in = input_grads.empty() ? y.new_zeros({0, hidden}) : ::torch::cat(input_grads).contiguous();
    Tensor grad_x = ::torch::empty({tokens, hidden}, y.options());
    start = std::chrono::steady_clock::now();
    moe.undispatch(plan, grad_in.data_ptr(), grad_x.data_ptr());
    add_time(capsule.context, start);
    return {grad_x, grad_gates, Tensor(), Tensor()};
  }
};

}  // namespace

Tensor moe_pipelined(const Tensor& x, const Tensor& gates, MoeExpertsImpl& experts, const MoeExchangeContext& context) {
  return Pipelined::apply(x, gates, &experts, context);
}

}  // namespace braid::torch
