#include "braid/tools/braid_serve/serve_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "braid/base/error.h"

namespace braid::serve {
namespace {

[[noreturn]] void bad(const std::string& what) { throw InvalidArgument({.op = "braid-serve"}, what); }

}  // namespace

GptShape gpt_shape(const ServeConfig& c) {
  GptShape s = c.model == "gpt-small" ? GptShape{512, 8, 8, 128} : GptShape{128, 6, 4, 64};
  if (c.width > 0) s.width = c.width;
  if (c.layers > 0) s.layers = c.layers;
  if (c.heads > 0) s.heads = c.heads;
  if (c.context > 0) s.context = c.context;
  return s;
}

void add_serve_flags(CLI::App& app, ServeConfig& c) {
  app.add_option("--model", c.model, "gpt (~1.2 M parameters) | gpt-small (~25 M): braid-train's sizes")
      ->check(CLI::IsMember({"gpt", "gpt-small"}))
      ->capture_default_str();
  app.add_option("--width", c.width, "model width (default: gpt 128, gpt-small 512)");
  app.add_option("--layers", c.layers, "transformer blocks (default: gpt 6, gpt-small 8)");
  app.add_option("--heads", c.heads, "attention heads (default: gpt 4, gpt-small 8)");
  app.add_option("--context", c.context, "longest sequence, prompt + generated (default: gpt 64, gpt-small 128)");
  app.add_option("--tp", c.tp, "tensor-parallel size: the job's world size (braid-run -n)")->capture_default_str();
  auto* prompt = app.add_option("--prompt", c.prompt, "the prompt text");
  auto* file = app.add_option("--prompt-file", c.prompt_file, "read the prompt from this file")->check(CLI::ExistingFile);
  prompt->excludes(file);
  app.add_option("--max-new-tokens", c.max_new_tokens, "tokens to generate (greedy)")->capture_default_str();
  app.add_option("--block-tokens", c.block_tokens, "token slots per KV-cache block")->capture_default_str();
  app.add_option("--cache-blocks", c.cache_blocks, "KV-cache blocks per layer (default: one full context)");
  app.add_option("--seed", c.seed, "initialisation seed (braid-train's: the same --seed, the same model)")
      ->capture_default_str();
  app.add_option("--checkpoint", c.checkpoint,
                 "a braid-train --export file of this model (same --model/--width/... and --data): its parameters")
      ->check(CLI::ExistingFile);
  app.add_option("--data", c.data, "corpus whose characters are the vocabulary (default: /usr/share/games/fortunes)");
  app.add_option("--threads", c.threads, "intra-op threads per rank (LibTorch and OpenBLAS)")->capture_default_str();
  app.add_option("--json", c.json_path, "write the tokens, the text and the latency figures here (rank 0)");
  app.add_option("--prefill-ranks", c.prefill_ranks,
                 "prefill/decode disaggregation: ranks [0, N) prefill the prompt with TP N and stream its KV cache "
                 "layer by layer to the other ranks, which decode with TP --tp (braid-run -n N + tp)")
      ->capture_default_str();
  app.add_flag("--kv-after-prefill", c.kv_after_prefill,
               "with --prefill-ranks: send the KV cache only after the whole prefill (the baseline of the layer-wise "
               "overlap)");
  app.add_flag("--recompute", c.recompute,
               "the reference: no KV cache, the whole sequence through the model for every token (tp 1)");
}

void validate(const ServeConfig& c, int world_size) {
  GptShape s = gpt_shape(c);
  if (s.heads < 1 || s.width % s.heads != 0) bad(fmt::format("--heads {} does not divide --width {}", s.heads, s.width));
  if (c.tp < 1) bad(fmt::format("--tp {}: need at least 1", c.tp));
  // The model's split before the job's size: the same answer whatever -n the job was given.
  if (s.heads % c.tp != 0) bad(fmt::format("--tp {} does not divide the model's {} attention heads", c.tp, s.heads));
  if (c.prefill_ranks < 0) bad(fmt::format("--prefill-ranks {}: must not be negative", c.prefill_ranks));
  if (c.prefill_ranks > 0 && s.heads % c.prefill_ranks != 0) {
    bad(fmt::format("--prefill-ranks {} does not divide the model's {} attention heads", c.prefill_ranks, s.heads));
  }
  if (c.prefill_ranks > 0 && c.recompute) bad("--recompute and --prefill-ranks do not go together");
  if (c.kv_after_prefill && c.prefill_ranks == 0) bad("--kv-after-prefill needs --prefill-ranks");
  if (c.tp + c.prefill_ranks != world_size) {
    bad(fmt::format("--tp {}{} with a job of {} ranks: run braid-run -n {}", c.tp,
                    c.prefill_ranks > 0 ? fmt::format(" and --prefill-ranks {}", c.prefill_ranks) : "", world_size,
                    c.tp + c.prefill_ranks));
  }
  if (s.layers < 1) bad(fmt::format("--layers {}: need at least 1", s.layers));
  if (s.context < 2 || s.context > 4096) bad(fmt::format("--context {}: must be in 2..4096", s.context));
  if (c.max_new_tokens < 1) bad(fmt::format("--max-new-tokens {}: need at least 1", c.max_new_tokens));
  if (c.block_tokens < 1) bad(fmt::format("--block-tokens {}: need at least 1", c.block_tokens));
  if (c.cache_blocks < 0) bad(fmt::format("--cache-blocks {}: must not be negative", c.cache_blocks));
  if (c.threads < 1) bad(fmt::format("--threads {}: need at least 1", c.threads));
  if (c.recompute && c.tp != 1) bad(fmt::format("--recompute runs the single-process reference: --tp {} must be 1", c.tp));
}

void check_fits_context(std::int64_t prompt_tokens, const ServeConfig& c) {
  std::int64_t context = gpt_shape(c).context, positions = prompt_tokens + c.max_new_tokens - 1;
  if (positions <= context) return;
  bad(fmt::format("a prompt of {} tokens and --max-new-tokens {} need {} positions; the model's context is {} (--context)",
                  prompt_tokens, c.max_new_tokens, positions, context));
}

std::string read_prompt(const ServeConfig& c) {
  std::string text = c.prompt;
  if (!c.prompt_file.empty()) {
    std::ifstream in(c.prompt_file, std::ios::binary);
    if (!in) bad(fmt::format("--prompt-file {}: cannot read it", c.prompt_file));
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
  }
  if (text.empty()) {
    bad(c.prompt_file.empty() ? "empty prompt: give --prompt TEXT or --prompt-file FILE"
                              : fmt::format("--prompt-file {} is empty", c.prompt_file));
  }
  return text;
}

}  // namespace braid::serve
