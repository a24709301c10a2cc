#include "braid/plan/training_traffic.h"

#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/comm_volume.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

constexpr double kBytes = 4;  // fp32 activations, gradients and parameters

[[noreturn]] void invalid(const std::string& what) { throw InvalidArgument({.op = "braid-plan traffic"}, what); }

void validate(const GptShape& m, const TrainingLayout& l) {
  require_range("vocab", m.vocab, 1, 1e9);
  require_range("width", m.width, 1, 1e6);
  require_range("layers", m.layers, 1, 1e5);
  require_range("heads", m.heads, 1, m.width, "heads split the width");
  require_range("context", m.context, 1, 1e8);
  if (m.width % m.heads != 0) invalid(fmt::format("heads = {} must divide width = {}", m.heads, m.width));
  require_range("dp", l.dp, 1, 1 << 24);
  require_range("tp", l.tp, 1, m.heads, "tp splits the attention heads");
  require_range("pp", l.pp, 1, m.layers + 3, "at most one stage per layer of [embeddings, blocks, ln, head]");
  require_range("chunks", l.chunks, 1, 1e5, "virtual stages per pipeline stage");
  require_range("microbatches", l.microbatches, 1, 1e9);
  require_range("micro-batch", l.micro_batch, 1, 1e9);
  if (m.heads % l.tp != 0) invalid(fmt::format("tp = {} must divide heads = {}", l.tp, m.heads));
  if (m.width % l.tp != 0) invalid(fmt::format("tp = {} must divide width = {}", l.tp, m.width));
  if (l.pp == 1 && l.chunks != 1) invalid(fmt::format("chunks = {} needs pp > 1 (interleaving needs stages)", l.chunks));
  if (static_cast<long long>(l.pp) * l.chunks > m.layers + 3) {
    invalid(fmt::format("pp x chunks = {} x {} virtual stages exceed the {} layers of [embeddings, {} blocks, ln, head]",
                        l.pp, l.chunks, m.layers + 3, m.layers));
  }
  const long long tokens = static_cast<long long>(l.micro_batch) * m.context;
  if (l.sequence_parallel && tokens % l.tp != 0) {
    invalid(fmt::format("sequence parallelism: tp = {} must divide micro-batch x context = {} x {}", l.tp,
                        l.micro_batch, m.context));
  }
}

Estimate named(Estimate e, std::string name, std::string formula = "") {
  e.name = std::move(name);
  if (!formula.empty()) e.formula = std::move(formula);
  return e;
}

Estimate count(std::string name, double value, std::string formula, std::string substituted) {
  return {std::move(name), value, Unit::kCount, std::move(formula), std::move(substituted)};
}

struct Params {
  double vp, sharded, replicated;
};

Params count_params(const GptShape& m, int tp) {
  const double h = m.width, layers = m.layers;
  const double vp = static_cast<double>((m.vocab + tp - 1) / tp) * tp;
  return {vp, 2 * vp * h + vp + layers * (12 * h * h + 7 * h), m.context * h + 6 * h * layers + 2 * h};
}

Estimates param_terms(const GptShape& m, const TrainingLayout& l, const Params& p) {
  const double per_rank = (p.sharded + l.tp * p.replicated) / (static_cast<double>(l.pp) * l.tp);
  return {count("padded_vocab", p.vp, "Vp = vocab rounded up to a multiple of tp",
                fmt::format("ceil({} / {}) x {}", m.vocab, l.tp, l.tp)),
          count("sharded_params", p.sharded, "P_s = 2 Vp h + Vp + L (12 h^2 + 7 h)  (embedding, head, block linears)",
                fmt::format("2 x {} x {} + {} + {} x (12 x {}^2 + 7 x {})", num(p.vp), m.width, num(p.vp), m.layers,
                            m.width, m.width)),
          count("replicated_params", p.replicated, "P_r = t h + 6 h L + 2 h  (positions, LayerNorms, row biases)",
                fmt::format("{} x {} + 6 x {} x {} + 2 x {}", m.context, m.width, m.width, m.layers, m.width)),
          count("total_params", p.sharded + p.replicated, "P_s + P_r",
                fmt::format("{} + {}", num(p.sharded), num(p.replicated))),
          count("params_per_rank", per_rank, "(P_s + tp P_r) / (pp tp)  (mean local parameters per rank)",
                fmt::format("({} + {} x {}) / ({} x {})", num(p.sharded), l.tp, num(p.replicated), l.pp, l.tp))};
}

Estimates tp_terms(const GptShape& m, const TrainingLayout& l, const Params& p) {
  const ActivationShape s{.micro_batch = static_cast<double>(l.micro_batch), .seq = static_cast<double>(m.context),
                          .hidden = static_cast<double>(m.width), .bytes = kBytes};
  const Estimate embedding = named(tp_row_layer_bytes(s, l.tp), "tp_embedding_bytes_per_microbatch",
                                   l.sequence_parallel ? "forward reduce-scatter + backward allgather: 2 (tp-1)/tp x S"
                                                       : "forward allreduce: 2 (tp-1)/tp x S");
  const Estimate block = named(find_estimate(tp_layer_bytes(s, l.tp, l.sequence_parallel, false),
                                             "tp_bytes_per_layer_per_rank"),
                               "tp_block_bytes_per_microbatch");
  const Estimate head = named(tp_column_layer_bytes(s, l.tp), "tp_head_bytes_per_microbatch",
                              l.sequence_parallel ? "forward allgather + backward reduce-scatter: 2 (tp-1)/tp x S"
                                                  : "backward allreduce of the input gradient: 2 (tp-1)/tp x S");
  const double tokens_bytes = l.micro_batch * static_cast<double>(m.context) * kBytes;
  const Estimate max = ring_allreduce_bytes(tokens_bytes, l.tp);
  const Estimate sums = ring_allreduce_bytes(2 * tokens_bytes, l.tp);
  const Estimate loss{"tp_cross_entropy_bytes_per_microbatch", max.value + sums.value, Unit::kBytes,
                      "allreduce(b t 4) + allreduce(2 b t 4)  (max; sum of exponentials and target logit)",
                      fmt::format("{} + {}", max.substituted, sums.substituted)};
  const double per_microbatch = embedding.value + m.layers * block.value + head.value + loss.value;
  Estimates out{embedding, block, head, loss};
  out.push_back({"tp_bytes_per_microbatch", per_microbatch, Unit::kBytes,
                 "embedding + L x block + head + cross-entropy  (summed over the stages)",
                 fmt::format("{} + {} x {} + {} + {} B", num(embedding.value), m.layers, num(block.value),
                             num(head.value), num(loss.value))});
  double step = l.microbatches * per_microbatch / l.pp;
  std::string formula = "M x per micro-batch / pp";
  std::string substituted = fmt::format("{} x {} / {}", l.microbatches, num(per_microbatch), l.pp);
  if (l.sequence_parallel) {
    const Estimate replicated = ring_allreduce_bytes(kBytes * p.replicated, l.tp);
    out.push_back({"tp_replicated_grad_bytes_per_step", replicated.value / l.pp, Unit::kBytes,
                   "allreduce over tp of the replicated gradients, on their stages: 2 (t-1)/t x 4 P_r / pp",
                   fmt::format("{} / {}", replicated.substituted, l.pp)});
    step += out.back().value;
    formula += " + replicated gradients";
    substituted += fmt::format(" + {}", num(out.back().value));
  }
  out.push_back({"tp_bytes_per_step", step, Unit::kBytes, formula, substituted + " B"});
  return out;
}

Estimates pp_terms(const GptShape& m, const TrainingLayout& l) {
  const ActivationShape s{.micro_batch = static_cast<double>(l.micro_batch), .seq = static_cast<double>(m.context),
                          .hidden = static_cast<double>(m.width), .bytes = kBytes};
  const Estimate boundary =
      find_estimate(pp_bytes(s, l.microbatches, l.chunks, l.tp, l.sequence_parallel), "pp_boundary_bytes");
  const int boundaries = l.pp * l.chunks - 1;
  return {boundary,
          count("pp_boundaries", boundaries, "pp v - 1 (between consecutive virtual stages)",
                fmt::format("{} x {} - 1", l.pp, l.chunks)),
          {"pp_bytes_per_step", 2.0 * boundaries * l.microbatches * boundary.value / l.pp, Unit::kBytes,
           "2 (pp v - 1) M x boundary / pp  (activation forward, gradient backward)",
           fmt::format("2 x {} x {} x {} / {} B", boundaries, l.microbatches, num(boundary.value), l.pp)}};
}

}  // namespace

GptShape gpt_preset(std::string_view name, int vocab) {
  if (name == "gpt-tiny") return {.vocab = vocab, .width = 128, .layers = 6, .heads = 4, .context = 64};
  if (name == "gpt-small") return {.vocab = vocab, .width = 512, .layers = 8, .heads = 8, .context = 128};
  invalid(fmt::format("--preset: unknown GPT preset '{}' (accepted: gpt-tiny, gpt-small)", name));
}

TrainingTraffic training_traffic(const GptShape& model, const TrainingLayout& layout) {
  validate(model, layout);
  const Params p = count_params(model, layout.tp);
  TrainingTraffic t;
  t.padded_vocab = p.vp;
  t.sharded_params = p.sharded;
  t.replicated_params = p.replicated;
  t.total_params = p.sharded + p.replicated;
  t.params = param_terms(model, layout, p);
  t.params_per_rank = find_estimate(t.params, "params_per_rank").value;
  t.dp_terms = {named(dp_allreduce_bytes(t.params_per_rank, kBytes, layout.dp), "dp_bytes_per_step",
                      "2 (dp-1)/dp x params per rank x 4 B  (one allreduce of the local gradients)")};
  t.tp_terms = tp_terms(model, layout, p);
  t.pp_terms = pp_terms(model, layout);
  t.dp_bytes = t.dp_terms.back().value;
  t.tp_bytes = find_estimate(t.tp_terms, "tp_bytes_per_step").value;
  t.pp_bytes = find_estimate(t.pp_terms, "pp_bytes_per_step").value;
  return t;
}

}  // namespace braid::plan
