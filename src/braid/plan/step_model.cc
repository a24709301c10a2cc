#include "braid/plan/step_model.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/cost_model.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

[[noreturn]] void invalid(const std::string& what) { throw InvalidArgument({.op = "braid-plan"}, what); }

double allreduce_seconds(double bytes, int n, const LinkParams& link) {
  if (n <= 1 || bytes <= 0) return 0;
  return collective_time({.op = Op::kAllreduce, .algorithm = Algorithm::kRing, .bytes = bytes, .ranks = n, .link = link})
      ->value;
}

// The DP group's allreduce: inside a node, over the inter-node link when each node holds one
// member, two-level (hierarchical or host_striped, the faster) when a node holds several.
double dp_allreduce_seconds(double bytes, const ClusterSpec& c, const Layout& l, Op op = Op::kAllreduce) {
  if (l.dp <= 1 || bytes <= 0) return 0;
  const int per_node = std::max(1, std::min(l.dp, c.devices_per_node / l.tp));
  if (per_node >= l.dp) {
    return collective_time({.op = op, .algorithm = Algorithm::kRing, .bytes = bytes, .ranks = l.dp, .link = c.intra})
        ->value;
  }
  if (per_node == 1 || op != Op::kAllreduce || l.dp % per_node != 0) {
    return collective_time({.op = op, .algorithm = Algorithm::kRing, .bytes = bytes, .ranks = l.dp, .link = c.inter})
        ->value;
  }
  // braid's tuner picks between the two two-level allreduces by size: take the faster.
  auto two_level = [&](Algorithm a) {
    return collective_time({.op = op, .algorithm = a, .bytes = bytes, .ranks = l.dp, .link = c.intra,
                            .ranks_per_node = per_node, .inter_link = c.inter})
        ->value;
  };
  return std::min(two_level(Algorithm::kHierarchical), two_level(Algorithm::kHostStriped));
}

struct DpCost {
  double seconds;
  double window;  // backward time it may hide behind
  std::string text;
};

// ZeRO in units of allreduce-equivalents: stage 0/1 one allreduce of the gradients; stage 2 m
// reduce-scatters (m/2 allreduces) and one parameter allgather (1/2); stage 3 m reduce-scatters
// and 2m allgathers. Compression shrinks the gradient part only.
DpCost dp_cost(const ModelSpec& model, const ClusterSpec& c, const Layout& l, const StepOptions& o, double t_compute) {
  const double params = model.params() / (static_cast<double>(l.tp) * l.pp);
  const double dense = params * o.grad_bytes;
  const double m = l.microbatches;
  double grad_units = 1, param_units = 0, window = t_compute * 2 / 3;
  if (l.zero == 2) grad_units = m / 2, param_units = 0.5, window = m * t_compute * 2 / 3;
  if (l.zero == 3) grad_units = m / 2, param_units = m, window = m * t_compute;
  double grad_seconds = 0;
  if (l.compression.codec == "topk") {
    const double gathered = l.dp * 8 * l.compression.parameter * params;
    grad_seconds = dp_allreduce_seconds(gathered, c, l, Op::kAllgather);
  } else {
    const Estimate wire = compressed_dp_bytes(l.compression, params, o.grad_bytes, std::max(l.dp, 2), model.hidden);
    const double ratio = wire.value / (2.0 * (std::max(l.dp, 2) - 1) / std::max(l.dp, 2) * dense);
    grad_seconds = dp_allreduce_seconds(dense * ratio, c, l);
  }
  const double param_seconds = dp_allreduce_seconds(params * o.weight_bytes, c, l);
  return {grad_units * grad_seconds + param_units * param_seconds, window,
          fmt::format("{} x {} s (gradients, {}) + {} x {} s (parameters) [ZeRO-{}]", num(grad_units), num(grad_seconds),
                      compression_name(l.compression), num(param_units), num(param_seconds), l.zero)};
}

}  // namespace

void validate_model_split(const ModelSpec& model, int tp, int pp) {
  require_range("tp", tp, 1, model.heads, "tp splits the attention heads");
  require_range("pp", pp, 1, model.layers, "at most one pipeline stage per layer");
  if (model.heads % tp != 0) invalid(fmt::format("tp = {} must divide heads = {}", tp, model.heads));
  if (model.kv_heads % tp != 0 && tp % model.kv_heads != 0) {
    invalid(fmt::format("tp = {} and kv-heads = {}: one must divide the other", tp, model.kv_heads));
  }
}

void validate_layout(const ModelSpec& model, const ClusterSpec& c, const Layout& l) {
  validate(model);
  validate_model_split(model, l.tp, l.pp);
  require_range("nodes", c.nodes, 1, 1e6);
  require_range("devices-per-node", c.devices_per_node, 1, 1024);
  require_range("device-flops", c.flops, 1e6, 1e18);
  require_range("efficiency", c.efficiency, 0.01, 1, "share of peak FLOP/s reached");
  require_range("dp", l.dp, 1, c.world());
  require_range("zero", l.zero, 0, 3, "ZeRO stages are 0 (off), 1, 2, 3");
  require_range("microbatches", l.microbatches, 1, 1e7);
  require_range("micro-batch", l.micro_batch, 1, 1e6);
  require_range("chunks", l.chunks, 1, model.layers);
  if (static_cast<long long>(l.dp) * l.tp * l.pp != c.world()) {
    invalid(fmt::format("dp x tp x pp = {} x {} x {} = {} must equal the cluster's {} devices ({} nodes x {})", l.dp,
                        l.tp, l.pp, static_cast<long long>(l.dp) * l.tp * l.pp, c.world(), c.nodes, c.devices_per_node));
  }
  if (l.schedule == Schedule::kInterleaved1F1B) {
    if (model.layers % (l.pp * l.chunks) != 0) {
      invalid(fmt::format("interleaved: layers = {} must be a multiple of pp x chunks = {}", model.layers,
                          l.pp * l.chunks));
    }
    if (l.microbatches % l.pp != 0) {
      invalid(fmt::format("interleaved: microbatches = {} must be a multiple of pp = {}", l.microbatches, l.pp));
    }
  }
}

namespace {

// The activations of one micro-batch at a layer boundary (b s h): what TP allreduces and what
// crosses a pipeline stage boundary.
double activation_message_bytes(const ModelSpec& model, const Layout& l, const StepOptions& o) {
  return static_cast<double>(l.micro_batch) * model.seq * model.hidden * o.activation_bytes;
}

// Appends `term` to items and returns its value, which the later terms build on.
double add(Estimates& items, Estimate term) {
  items.push_back(std::move(term));
  return items.back().value;
}

Estimate compute_term(const ModelSpec& model, const ClusterSpec& c, const Layout& l) {
  const double recompute_factor = l.recompute == Recompute::kFull ? 4.0 / 3 : 1.0;
  const double flop_mb = model.train_flops_per_sequence() * l.micro_batch * recompute_factor / (l.tp * l.pp);
  return {"compute_seconds_per_microbatch", flop_mb / (c.flops * c.efficiency), Unit::kSeconds,
          "(6 Phi s + 12 L h s^2) x b x recompute / (tp pp) / (peak x efficiency)",
          fmt::format("{} FLOP / ({} x {})", num(flop_mb), num(c.flops), num(c.efficiency))};
}

// Tensor parallelism: 4 activation allreduces per layer and micro-batch (2 forward, 2
// backward), 6 when full recomputation repeats the forward ones; inside a node when tp fits.
Estimate tp_term(const ModelSpec& model, const ClusterSpec& c, const Layout& l, const StepOptions& o) {
  const double message = activation_message_bytes(model, l, o);
  const LinkParams& tp_link = l.tp <= c.devices_per_node ? c.intra : c.inter;
  const int allreduces = l.recompute == Recompute::kFull ? 6 : 4;
  const double layers_per_stage = static_cast<double>(model.layers) / l.pp;
  const double t_one = allreduce_seconds(message, l.tp, tp_link);
  return {"tp_seconds_per_microbatch", layers_per_stage * allreduces * t_one, Unit::kSeconds,
          "layers/pp x allreduces x T_ring(b s h bytes, tp)",
          fmt::format("{} x {} x {} s [T_ring({} B, {}) on {}]", num(layers_per_stage), allreduces, num(t_one),
                      num(message), l.tp, tp_link.name)};
}

// Pipeline parallelism: the boundary activations go forward and their gradients back, once per
// model chunk (v); sequence parallelism leaves 1/tp of them on each rank.
Estimate pp_term(const ModelSpec& model, const ClusterSpec& c, const Layout& l, const StepOptions& o) {
  const bool boundary_crosses_nodes = static_cast<long long>(l.tp) * l.dp >= c.devices_per_node;
  const LinkParams& pp_link = boundary_crosses_nodes && c.nodes > 1 ? c.inter : c.intra;
  const double boundary = activation_message_bytes(model, l, o) / (l.sequence_parallel ? l.tp : 1);
  const double t_pp = l.pp > 1 ? 2.0 * l.chunks * (pp_link.alpha + boundary / pp_link.bandwidth) : 0;
  return {"pp_seconds_per_microbatch", t_pp, Unit::kSeconds, "2 v (alpha + boundary / bandwidth)",
          fmt::format("2 x {} x ({} + {} / {}) on {}", l.chunks, num(pp_link.alpha), num(boundary),
                      num(pp_link.bandwidth), pp_link.name)};
}

// The schedule's bubble fraction, and the pipeline time it stretches m micro-batches of t_mb
// to. Returns the pipeline seconds.
double add_pipeline_terms(const Layout& l, double t_mb, Estimates& items) {
  Estimate bubble_estimate{"bubble_fraction", 0, Unit::kRatio, "0 (no pipeline)", "pp = 1"};
  if (l.pp > 1) {
    bubble_estimate = find_estimate(
        pipeline_bubble(l.schedule, {.stages = l.pp, .microbatches = l.microbatches, .chunks = l.chunks}),
        "bubble_fraction");
    bubble_estimate.formula += fmt::format("  [{}]", pipeline_schedule_kind_name(l.schedule));
  }
  const double bubble = add(items, std::move(bubble_estimate));
  const double t_pipeline = l.microbatches * t_mb / (1 - bubble);
  items.push_back({"bubble_seconds", t_pipeline - l.microbatches * t_mb, Unit::kSeconds, "t_pipeline - m t_mb",
                   fmt::format("{} - {} x {}", num(t_pipeline), l.microbatches, num(t_mb))});
  return add(items, {"pipeline_seconds", t_pipeline, Unit::kSeconds, "m (t_compute + t_tp + t_pp) / (1 - bubble)",
                     fmt::format("{} x {} / (1 - {})", l.microbatches, num(t_mb), num(bubble))});
}

// Data parallelism: the gradient (and ZeRO parameter) traffic, and the part of it that the
// backward pass cannot hide. Returns the exposed seconds.
double add_dp_terms(const ModelSpec& model, const ClusterSpec& c, const Layout& l, const StepOptions& o,
                    double t_compute, Estimates& items) {
  DpCost dp = dp_cost(model, c, l, o, t_compute);
  const double exposed = dp.seconds - std::min(dp.seconds, o.overlap * dp.window);
  items.push_back({"dp_seconds", dp.seconds, Unit::kSeconds, "grad units x T(gradients) + param units x T(parameters)",
                   dp.text});
  return add(items, {"dp_exposed_seconds", exposed, Unit::kSeconds, "t_dp - min(t_dp, overlap x backward window)",
                     fmt::format("{} - min({}, {} x {})", num(dp.seconds), num(dp.seconds), num(o.overlap),
                                 num(dp.window))});
}

// Memory of the first pipeline stage (the one holding the most activations): model states
// under the ZeRO stage, plus activations under the schedule and recomputation.
void add_memory_terms(const ModelSpec& model, const ClusterSpec& c, const Layout& l, const StepOptions& o,
                      StepEstimate& out) {
  Estimates states = model_state_memory({.params = model.params(), .weight_bytes = o.weight_bytes,
                                         .grad_bytes = o.grad_bytes, .optimizer_bytes = o.optimizer_bytes,
                                         .dp = l.dp, .tp = l.tp, .pp = l.pp, .zero = l.zero});
  Estimates acts = activation_memory({.seq = static_cast<double>(model.seq), .micro_batch = static_cast<double>(l.micro_batch),
                                      .hidden = static_cast<double>(model.hidden), .heads = static_cast<double>(model.heads),
                                      .layers = model.layers, .tp = l.tp, .pp = l.pp, .microbatches = l.microbatches,
                                      .chunks = l.chunks, .sequence_parallel = l.sequence_parallel,
                                      .recompute = l.recompute, .schedule = l.schedule, .bytes = o.activation_bytes});
  Estimates& items = out.items;
  items.insert(items.end(), states.begin(), states.end());
  items.push_back(find_estimate(acts, "activation_bytes"));
  out.memory_bytes = find_estimate(states, "model_state_bytes").value + find_estimate(acts, "activation_bytes").value;
  out.fits = out.memory_bytes <= c.memory;
  items.push_back({"memory_bytes", out.memory_bytes, Unit::kBytes, "model states + activations (first stage)",
                   fmt::format("{} + {} B of {} B", num(find_estimate(states, "model_state_bytes").value),
                               num(find_estimate(acts, "activation_bytes").value), num(c.memory))});
}

// Tokens per second and model FLOP utilisation of a step of out.step_seconds.
void add_throughput_terms(const ModelSpec& model, const ClusterSpec& c, const Layout& l, StepEstimate& out) {
  const double sequences = static_cast<double>(l.dp) * l.microbatches * l.micro_batch;
  out.tokens_per_second = sequences * model.seq / out.step_seconds;
  out.mfu = sequences * model.train_flops_per_sequence() / (out.step_seconds * c.world() * c.flops);
  out.items.push_back({"tokens_per_second", out.tokens_per_second, Unit::kCount, "dp m b s / step",
                       fmt::format("{} x {} / {}", num(sequences), model.seq, num(out.step_seconds))});
  out.items.push_back({"mfu", out.mfu, Unit::kRatio, "useful FLOP / (step x devices x peak)",
                       fmt::format("{} x {} / ({} x {} x {})", num(sequences), num(model.train_flops_per_sequence()),
                                   num(out.step_seconds), c.world(), num(c.flops))});
}

}  // namespace

StepEstimate estimate_step(const ModelSpec& model, const ClusterSpec& c, const Layout& l, const StepOptions& o) {
  validate_layout(model, c, l);
  require_range("overlap", o.overlap, 0, 1);
  StepEstimate out;
  out.layout = l;
  Estimates& items = out.items;
  // The terms in the order of the model in step_model.h, each built on the ones before it.
  const double t_compute = add(items, compute_term(model, c, l));
  const double t_tp = add(items, tp_term(model, c, l, o));
  const double t_pp = add(items, pp_term(model, c, l, o));
  const double t_pipeline = add_pipeline_terms(l, t_compute + t_tp + t_pp, items);
  const double exposed = add_dp_terms(model, c, l, o, t_compute, items);
  out.step_seconds = add(items, {"step_seconds", t_pipeline + exposed, Unit::kSeconds, "t_pipeline + exposed DP",
                                 fmt::format("{} + {}", num(t_pipeline), num(exposed))});
  add_memory_terms(model, c, l, o, out);
  add_throughput_terms(model, c, l, out);
  return out;
}

}  // namespace braid::plan
