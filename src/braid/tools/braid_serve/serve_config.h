// braid-serve's command line (docs/serving.md "braid-serve"): the model (braid-train's GPT sizes,
// the same flags), the TP size, the prompt, the generation and cache settings. Torch-free.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace braid::serve {

struct ServeConfig {
  std::string model = "gpt";          // gpt | gpt-small (braid-train's sizes)
  std::int64_t width = 0, layers = 0, heads = 0, context = 0;  // 0: the model's
  int tp = 1;                          // must equal the job's world size
  std::string prompt, prompt_file;     // exactly one
  std::int64_t max_new_tokens = 32;
  int block_tokens = 16;
  std::int64_t cache_blocks = 0;       // 0: one full context
  std::uint64_t seed = 1;              // braid-train's default: the same initial model
  std::string data;                    // the corpus whose characters are the vocabulary
  std::string checkpoint;              // a braid-train --export file: its parameters instead of --seed's
  int threads = 1;
  std::string json_path;
  bool recompute = false;              // the reference: no cache, whole sequence every step, tp 1
  int prefill_ranks = 0;               // > 0: ranks [0, N) prefill (TP N), the rest decode (TP --tp)
  bool kv_after_prefill = false;       // stream the cache only after the whole prefill (the baseline)

  std::string data_dir() const { return data.empty() ? "/usr/share/games/fortunes" : data; }
};

// The model's sizes after the overrides.
struct GptShape {
  std::int64_t width, layers, heads, context;
};
GptShape gpt_shape(const ServeConfig& c);

void add_serve_flags(CLI::App& app, ServeConfig& c);
// InvalidArgument naming the flag: tp not the world size or not dividing the heads, a model
// shape that does not split, bad sizes, --recompute with tp > 1.
void validate(const ServeConfig& c, int world_size);
// InvalidArgument when the prompt and the tokens to generate pass the context (the last
// generated token is never fed back: prompt + max_new_tokens - 1 positions).
void check_fits_context(std::int64_t prompt_tokens, const ServeConfig& c);
// The prompt's text (--prompt, or --prompt-file read whole); InvalidArgument when empty or unreadable.
std::string read_prompt(const ServeConfig& c);

}  // namespace braid::serve
