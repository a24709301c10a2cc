#include "braid/plan/memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

const char* recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

Recompute parse_recompute(std::string_view name, std::string_view field) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (name == recompute_name(r)) return r;
  }
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("{}: unknown recomputation '{}' (none, selective, full)", field, name));
}

Estimate weight_memory(double params, double bytes, int shards) {
  require_range("params", params, 0, 1e16);
  require_range("shards", shards, 1, 1e7);
  return {"weight_bytes", params * bytes / shards, Unit::kBytes, "params x bytes / shards",
          fmt::format("{} x {} / {} B", num(params), num(bytes), shards)};
}

Estimates model_state_memory(const ModelStateInput& in) {
  require_range("params", in.params, 1, 1e16);
  require_range("dp", in.dp, 1, 1e7);
  require_range("tp", in.tp, 1, 1e7);
  require_range("pp", in.pp, 1, 1e7);
  require_range("zero stage", in.zero, 0, 3, "ZeRO stages are 0 (off), 1, 2, 3");
  const double model_shards = static_cast<double>(in.tp) * in.pp;
  const double w_shards = model_shards * (in.zero >= 3 ? in.dp : 1);
  const double g_shards = model_shards * (in.zero >= 2 ? in.dp : 1);
  const double o_shards = model_shards * (in.zero >= 1 ? in.dp : 1);
  const double w = in.params * in.weight_bytes / w_shards;
  const double g = in.params * in.grad_bytes / g_shards;
  const double o = in.params * in.optimizer_bytes / o_shards;
  auto text = [&](double bytes, double shards) {
    return fmt::format("{} x {} / {} B", num(in.params), num(bytes), num(shards));
  };
  return {{"weight_bytes", w, Unit::kBytes, in.zero >= 3 ? "Phi x bytes / (tp pp dp)" : "Phi x bytes / (tp pp)",
           text(in.weight_bytes, w_shards)},
          {"gradient_bytes", g, Unit::kBytes, in.zero >= 2 ? "Phi x bytes / (tp pp dp)" : "Phi x bytes / (tp pp)",
           text(in.grad_bytes, g_shards)},
          {"optimizer_bytes", o, Unit::kBytes,
           in.zero >= 1 ? "Phi x K / (tp pp dp)  (K = 12: Adam fp32 master, m, v)" : "Phi x K / (tp pp)  (K = 12)",
           text(in.optimizer_bytes, o_shards)},
          {"model_state_bytes", w + g + o, Unit::kBytes, "weights + gradients + optimizer",
           fmt::format("{} + {} + {} B", num(w), num(g), num(o))}};
}

namespace {

// Bytes per layer per micro-batch divided by s b h, and the formula that gives it.
struct PerLayer {
  double factor;
  std::string formula;
  std::string substituted;
};

PerLayer per_layer_factor(const ActivationInput& in) {
  const double t = in.tp, a = in.heads, s = in.seq, h = in.hidden;
  const double scores = 5 * a * s / (h * t);
  const bool sp = in.sequence_parallel;
  switch (in.recompute) {
    case Recompute::kFull:
      return {sp ? 2 / t : 2.0, sp ? "2 / t" : "2", sp ? fmt::format("2 / {}", num(t)) : "2"};
    case Recompute::kSelective:
      return {sp ? 34 / t : 10 + 24 / t, sp ? "34 / t" : "10 + 24/t",
              sp ? fmt::format("34 / {}", num(t)) : fmt::format("10 + 24/{}", num(t))};
    case Recompute::kNone:
      break;
  }
  if (sp) {
    return {34 / t + scores, "34/t + 5 a s / (h t)",
            fmt::format("34/{} + 5 x {} x {} / ({} x {})", num(t), num(a), num(s), num(h), num(t))};
  }
  return {10 + 24 / t + scores, "10 + 24/t + 5 a s / (h t)",
          fmt::format("10 + 24/{} + 5 x {} x {} / ({} x {})", num(t), num(a), num(s), num(h), num(t))};
}

}  // namespace

Estimates activation_memory(const ActivationInput& in) {
  require_range("seq", in.seq, 1, 1e8);
  require_range("micro-batch", in.micro_batch, 1, 1e6);
  require_range("layers", in.layers, 1, 1e5);
  require_range("tp", in.tp, 1, 1e6);
  require_range("pp", in.pp, 1, in.layers, "at most one stage per layer");
  require_range("microbatches", in.microbatches, 1, 1e9);
  require_range("chunks", in.chunks, 1, 1e6);
  PerLayer f = per_layer_factor(in);
  const double sbh = in.seq * in.micro_batch * in.hidden;
  const double per_layer = sbh * f.factor * in.bytes / 2;
  double in_flight = in.schedule == Schedule::kGPipe ? in.microbatches : std::min(in.pp, in.microbatches);
  std::string flight_text = num(in_flight);
  if (in.schedule == Schedule::kInterleaved1F1B && in.pp > 1) {
    in_flight *= 1 + (in.pp - 1.0) / (static_cast<double>(in.pp) * in.chunks);
    flight_text = fmt::format("{} x (1 + ({}-1)/({} x {}))", std::min(in.pp, in.microbatches), in.pp, in.pp, in.chunks);
  }
  const double layers_per_stage = static_cast<double>(in.layers) / in.pp;
  return {{"activation_bytes_per_layer", per_layer, Unit::kBytes,
           fmt::format("s b h ({}) x bytes/2  [{} recomputation{}]", f.formula, recompute_name(in.recompute),
                       in.sequence_parallel ? ", sequence parallel" : ""),
           fmt::format("{} x {} x {} x ({}) x {}/2 B", num(in.seq), num(in.micro_batch), num(in.hidden), f.substituted,
                       num(in.bytes))},
          {"activation_bytes", per_layer * layers_per_stage * in_flight, Unit::kBytes,
           "per layer x layers/p x micro-batches in flight",
           fmt::format("{} x {}/{} x {} B", num(per_layer), in.layers, in.pp, flight_text)}};
}

}  // namespace braid::plan
