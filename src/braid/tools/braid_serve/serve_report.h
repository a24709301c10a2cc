// What braid-serve prints and writes with --json (docs/serving.md lists the fields): the
// generated text and tokens, the cache's block accounting and the per-token latency, its median
// and p90 split into communication (inside the TP allreduces) and compute (the rest), and the
// collectives that ran with the algorithm the tuner picked for each.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "braid/tools/braid_serve/generation.h"
#include "braid/tools/braid_serve/serve_config.h"

namespace braid::serve {

struct ServeRun {
  const ServeConfig* config = nullptr;
  std::int64_t vocab = 0;
  std::int64_t prompt_tokens = 0;
  std::string text;                       // the generated characters
  CachedGeneration generation;            // tokens only, with --recompute
  std::map<std::string, std::int64_t> collectives;
  std::int64_t disaggregated_ttft_ns = -1;  // --prefill-ranks: prefill start to every layer at the decode side
  std::int64_t kv_bytes_sent = 0;           // --prefill-ranks: the KV bytes rank 0 streamed
};

struct Percentiles {
  double median_ms = 0, p90_ms = 0;
};
// Nearest-rank percentiles of nanosecond samples, in ms (zeros when there is none).
Percentiles percentiles(std::vector<std::int64_t> samples_ns);

nlohmann::json to_json(const ServeRun& run);
// The text, then one summary line per figure (stdout).
void print_report(const ServeRun& run);

}  // namespace braid::serve
