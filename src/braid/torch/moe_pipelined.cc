#include "braid/torch/moe_pipelined.h"

#include <chrono>
#include <utility>
#include <vector>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

using ::torch::Tensor;
using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

// One chunk's expert computation as the forward left it: the input rows (a leaf that takes
// the input gradient) and the output rows with their graph.
struct ChunkGraph {
  Tensor input, output;
};

// What the backward needs besides saved tensors: the exchange context, the experts, each
// chunk's graph, and the experts' parameter gradients summed over the chunks so far.
struct PipelineCapsule : ::torch::CustomClassHolder {
  MoeExchangeContext context;
  MoeExpertsImpl* experts = nullptr;
  std::vector<ChunkGraph> chunks;
  std::vector<Tensor> parameter_grads;
  bool graph_released = false;
};

PipelineCapsule& kept(AutogradContext* ctx) {
  return *static_cast<PipelineCapsule*>(ctx->saved_data["moe"].toCapsule().get());
}

Tensor rows_of(const void* data, std::int64_t rows, std::int64_t hidden) {
  return ::torch::from_blob(const_cast<void*>(data), {rows, hidden}, ::torch::kFloat32);
}

template <typename Exchange>
void timed(const MoeExchangeContext& context, Exchange&& exchange) {
  auto start = std::chrono::steady_clock::now();
  exchange();
  if (context.clock == nullptr) return;
  context.clock->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Chunk c of the forward: the experts on its rows, with a graph when a backward may follow.
void forward_chunk(const parallel::MoeExpertChunk& c, MoeExpertsImpl& experts, bool keep_graph,
                   PipelineCapsule& capsule) {
  Tensor in = rows_of(c.input, c.rows, c.hidden).clone();  // the dispatcher reuses its buffer
  ::torch::AutoGradMode graph(keep_graph);                 // a Function's forward runs without one
  if (keep_graph) in.requires_grad_(true);
  Tensor y = experts.forward(in, c.expert_offsets);
  rows_of(c.output, c.rows, c.hidden).copy_(y.detach());
  if (keep_graph) capsule.chunks.push_back({in, y});
}

// Chunk c of the backward: c.input holds d y of the chunk's rows; writes d input to c.output
// and adds the chunk's parameter gradients to the capsule's sums. autograd::grad, not
// backward: accumulating into .grad chunk by chunk would fire each parameter's
// grad-accumulator hooks (DDP's) once per chunk; accumulate_parameter_grads does it once.
void backward_chunk(const parallel::MoeExpertChunk& c, PipelineCapsule& capsule) {
  ChunkGraph g = std::move(capsule.chunks[static_cast<std::size_t>(c.chunk)]);
  capsule.chunks[static_cast<std::size_t>(c.chunk)] = ChunkGraph{};  // released when g goes
  Tensor grad_in = rows_of(c.output, c.rows, c.hidden);
  if (c.rows == 0 || !g.output.requires_grad()) {
    grad_in.zero_();
    return;
  }
  std::vector<Tensor> wrt{g.input};
  for (const Tensor& p : capsule.experts->parameters()) wrt.push_back(p);
  std::vector<Tensor> grads = ::torch::autograd::grad({g.output}, wrt, {rows_of(c.input, c.rows, c.hidden)},
                                                      /*retain_graph=*/false, /*create_graph=*/false,
                                                      /*allow_unused=*/true);
  if (grads[0].defined()) {
    grad_in.copy_(grads[0]);
  } else {
    grad_in.zero_();
  }
  capsule.parameter_grads.resize(wrt.size() - 1);
  for (std::size_t i = 1; i < grads.size(); ++i) {
    Tensor& sum = capsule.parameter_grads[i - 1];
    if (!grads[i].defined()) continue;
    sum = sum.defined() ? sum + grads[i] : grads[i];
  }
}

// Adds the summed gradients into the parameters' .grad through autograd, so that every
// parameter's accumulator (and DDP's hook on it) runs once: d/dp sum(p x g) is g, exactly
// (the sum's backward passes ones, the product's multiplies them by g).
void accumulate_parameter_grads(PipelineCapsule& capsule) {
  std::vector<Tensor> params = capsule.experts->parameters();
  ::torch::AutoGradMode with_graph(true);  // a backward runs without one
  Tensor total;
  for (std::size_t i = 0; i < capsule.parameter_grads.size() && i < params.size(); ++i) {
    const Tensor& g = capsule.parameter_grads[i];
    if (!g.defined()) continue;
    Tensor term = (params[i] * g).sum();
    total = total.defined() ? total + term : term;
  }
  capsule.parameter_grads.clear();
  if (total.defined()) ::torch::autograd::backward({total});
}

struct Pipelined : public ::torch::autograd::Function<Pipelined> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& gates, MoeExpertsImpl* experts,
                        const MoeExchangeContext& context, bool keep_graph) {
    auto capsule = c10::make_intrusive<PipelineCapsule>();
    capsule->context = context;
    capsule->experts = experts;
    const parallel::MoeDispatchPlan& plan = *context.plan;
    Tensor tokens = x.contiguous();
    const std::int64_t t = plan.routing.tokens, k = plan.routing.top_k, hidden = tokens.size(-1);
    Tensor choice_rows = ::torch::empty({t * k, hidden}, tokens.options());
    // The whole pipelined layer is timed: exchange with the experts' compute inside.
    timed(context, [&] {
      context.dispatcher->run_choices(
          plan, tokens.data_ptr(),
          [&](const parallel::MoeExpertChunk& c) { forward_chunk(c, *experts, keep_graph, *capsule); },
          choice_rows.data_ptr());
    });
    Tensor per_choice = choice_rows.view({t, k, hidden});
    ctx->save_for_backward({per_choice, gates});
    ctx->saved_data["moe"] = c10::IValue::make_capsule(capsule);
    return moe_gate_weighted_sum(per_choice, gates);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    PipelineCapsule& capsule = kept(ctx);
    const parallel::MoeDispatchPlan& plan = *capsule.context.plan;
    if (capsule.graph_released || capsule.chunks.size() != static_cast<std::size_t>(plan.chunks())) {
      // every rank reaches this before any exchange: no hang
      throw InvalidArgument({.op = "moe pipelined backward"},
                            "the pipelined MoE layer's backward ran twice through one forward (retain_graph); "
                            "its chunk graphs are released by the first backward: use chunks = 1");
    }
    capsule.graph_released = true;
    variable_list saved = ctx->get_saved_variables();
    const Tensor& per_choice = saved[0];
    const Tensor& gates = saved[1];
    Tensor grad_out = grads[0].contiguous();
    MoeWeightedSumGrads grad = moe_gate_weighted_sum_backward(per_choice, gates, grad_out);
    Tensor grad_x = ::torch::empty({plan.routing.tokens, grad_out.size(-1)}, grad_out.options());
    timed(capsule.context, [&] {
      capsule.context.dispatcher->run_backward(
          plan, grad.per_choice.data_ptr(), [&](const parallel::MoeExpertChunk& c) { backward_chunk(c, capsule); },
          grad_x.data_ptr());
    });
    capsule.chunks.clear();
    accumulate_parameter_grads(capsule);
    return {grad_x, grad.gates, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor moe_pipelined(const Tensor& x, const Tensor& gates, MoeExpertsImpl& experts, const MoeExchangeContext& context) {
  return Pipelined::apply(x, gates, &experts, context, ::torch::GradMode::is_enabled());
}

}  // namespace braid::torch
