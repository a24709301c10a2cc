#include "braid/tools/braid_serve/serve_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace braid::serve {
namespace {

constexpr double kNsPerMs = 1e6;

struct DecodeFigures {
  Percentiles total, comm, compute;
  double comm_share = 0;  // of the decode steps' summed time
};

DecodeFigures decode_figures(const CachedGeneration& g) {
  std::vector<std::int64_t> total, comm, compute;
  std::int64_t total_sum = 0, comm_sum = 0;
  for (const TokenTiming& t : g.steps) {
    total.push_back(t.total_ns);
    comm.push_back(t.comm_ns);
    compute.push_back(t.total_ns - t.comm_ns);
    total_sum += t.total_ns;
    comm_sum += t.comm_ns;
  }
  return {percentiles(total), percentiles(comm), percentiles(compute),
          total_sum > 0 ? static_cast<double>(comm_sum) / static_cast<double>(total_sum) : 0.0};
}

nlohmann::json percentiles_json(const Percentiles& p) { return {{"median_ms", p.median_ms}, {"p90_ms", p.p90_ms}}; }

}  // namespace

Percentiles percentiles(std::vector<std::int64_t> samples_ns) {
  if (samples_ns.empty()) return {};
  std::sort(samples_ns.begin(), samples_ns.end());
  auto at = [&](double q) {
    auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples_ns.size())));
    return static_cast<double>(samples_ns[std::max<std::size_t>(rank, 1) - 1]) / kNsPerMs;
  };
  return {at(0.5), at(0.9)};
}

nlohmann::json to_json(const ServeRun& run) {
  const ServeConfig& c = *run.config;
  GptShape s = gpt_shape(c);
  const CachedGeneration& g = run.generation;
  nlohmann::json j = {
      {"model", {{"name", c.model}, {"width", s.width}, {"layers", s.layers}, {"heads", s.heads},
                 {"context", s.context}, {"vocab", run.vocab}, {"seed", c.seed}}},
      {"tp", c.tp},
      {"mode", c.recompute ? "recompute" : "cached"},
      {"threads", c.threads},
      {"prompt_tokens", run.prompt_tokens},
      {"tokens", g.tokens},
      {"text", run.text},
  };
  if (c.recompute) return j;
  if (c.prefill_ranks > 0) {  // the decode side's timings stay there: the stream's figures instead
    j["mode"] = "disaggregated";
    j["disaggregation"] = {{"prefill_ranks", c.prefill_ranks}, {"decode_tp", c.tp},
                           {"kv_after_prefill", c.kv_after_prefill},
                           {"ttft_ms", static_cast<double>(run.disaggregated_ttft_ns) / kNsPerMs},
                           {"kv_bytes_sent_by_rank0", run.kv_bytes_sent}};
    return j;
  }
  DecodeFigures d = decode_figures(g);
  j["cache"] = {{"block_tokens", c.block_tokens}, {"cached_tokens", g.cached_tokens}, {"blocks_used", g.blocks_used},
                {"local_heads", s.heads / c.tp}};
  j["prefill"] = {{"ms", static_cast<double>(g.prefill.total_ns) / kNsPerMs},
                  {"comm_ms", static_cast<double>(g.prefill.comm_ns) / kNsPerMs}};
  j["decode"] = {{"steps", g.steps.size()},
                 {"total", percentiles_json(d.total)},
                 {"comm", percentiles_json(d.comm)},
                 {"compute", percentiles_json(d.compute)},
                 {"comm_share", d.comm_share}};
  j["collectives"] = run.collectives;
  return j;
}

void print_report(const ServeRun& run) {
  const CachedGeneration& g = run.generation;
  std::printf("%s\n", run.text.c_str());
  if (run.config->recompute) {
    std::printf("braid-serve: %zu tokens by full recompute (no cache, the reference)\n", g.tokens.size());
    return;
  }
  if (run.config->prefill_ranks > 0) {
    std::printf("braid-serve: prefill tp %d -> decode tp %d, %lld prompt tokens, %zu generated; KV streamed %s: "
                "first token's transfer done %.3f ms after prefill start, %lld KV bytes from rank 0\n",
                run.config->prefill_ranks, run.config->tp, static_cast<long long>(run.prompt_tokens), g.tokens.size(),
                run.config->kv_after_prefill ? "after prefill" : "layer by layer",
                static_cast<double>(run.disaggregated_ttft_ns) / kNsPerMs, static_cast<long long>(run.kv_bytes_sent));
    return;
  }
  DecodeFigures d = decode_figures(g);
  std::printf("braid-serve: tp %d, %lld prompt tokens, %zu generated; prefill %.3f ms (comm %.3f ms)\n", run.config->tp,
              static_cast<long long>(run.prompt_tokens), g.tokens.size(),
              static_cast<double>(g.prefill.total_ns) / kNsPerMs, static_cast<double>(g.prefill.comm_ns) / kNsPerMs);
  std::printf("per token: median %.3f ms, p90 %.3f ms; comm median %.3f / p90 %.3f ms, compute median %.3f / p90 "
              "%.3f ms; comm share %.1f%%\n",
              d.total.median_ms, d.total.p90_ms, d.comm.median_ms, d.comm.p90_ms, d.compute.median_ms,
              d.compute.p90_ms, 100 * d.comm_share);
  std::printf("kv cache: %lld tokens in %lld blocks of %d\n", static_cast<long long>(g.cached_tokens),
              static_cast<long long>(g.blocks_used), run.config->block_tokens);
  for (const auto& [name, calls] : run.collectives) std::printf("  %s: %lld calls\n", name.c_str(), static_cast<long long>(calls));
}

}  // namespace braid::serve
