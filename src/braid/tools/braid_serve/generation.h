// Greedy generation, two ways: with the KV-cached (and possibly tensor-parallel) GptDecoder, timed
// token by token, and the reference the cache must reproduce: the single-process GPT run over the
// whole sequence for every new token (no cache at all). Greedy: the next token is the argmax of
// the last position's logits (the lowest id on a tie, the same rule on both paths).
#pragma once

#include <cstdint>
#include <vector>

#include "braid/tools/braid_serve/collective_meter.h"
#include "braid/tools/braid_serve/gpt_decoder.h"
#include "braid/tools/braid_train/models.h"

namespace braid::serve {

struct TokenTiming {
  std::int64_t total_ns = 0;
  std::int64_t comm_ns = 0;  // inside the TP allreduces
};

struct CachedGeneration {
  std::vector<std::int64_t> tokens;  // the generated ones, not the prompt
  TokenTiming prefill;               // the prompt, up to the first token
  std::vector<TokenTiming> steps;    // one per later token
  std::int64_t cached_tokens = 0;    // the cache's length at the end (prompt + tokens - 1)
  std::int64_t blocks_used = 0;      // pool blocks the sequence held at the end
};

// REQUIRES: prompt not empty, prompt + max_new_tokens - 1 <= the context (the decoder checks).
CachedGeneration generate_with_cache(GptDecoder& decoder, const CollectiveMeter& meter,
                                     const std::vector<std::int64_t>& prompt, std::int64_t max_new_tokens);

std::vector<std::int64_t> generate_by_recompute(train::TrainModel& full, const std::vector<std::int64_t>& prompt,
                                                std::int64_t max_new_tokens);

}  // namespace braid::serve
