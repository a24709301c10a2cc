#include "braid/plan/model_spec.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

double ModelSpec::params() const {
  if (params_override > 0) return params_override;
  const double h = hidden;
  const double kv = static_cast<double>(kv_heads) * head_dim();
  const double attention = 2 * h * h + 2 * h * kv;
  const double mlp = (gated_mlp ? 3.0 : 2.0) * h * ffn_hidden;
  const double embeddings = (tied_embeddings ? 1.0 : 2.0) * vocab * h;
  return layers * (attention + mlp) + embeddings;
}

double ModelSpec::train_flops_per_sequence() const {
  const double s = seq;
  return 6.0 * params() * s + 12.0 * layers * static_cast<double>(hidden) * s * s;
}

void validate(const ModelSpec& m) {
  require_range("layers", m.layers, 1, 1e5);
  require_range("hidden", m.hidden, 1, 1e7);
  require_range("heads", m.heads, 1, m.hidden, "at most one head per hidden unit");
  require_range("kv-heads", m.kv_heads, 1, m.heads, "between 1 (MQA) and heads (MHA)");
  require_range("ffn-hidden", m.ffn_hidden, 1, 1e8);
  require_range("vocab", m.vocab, 1, 1e8);
  require_range("seq", m.seq, 1, 1e8);
  if (m.hidden % m.heads != 0) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("hidden = {} must be a multiple of heads = {}", m.hidden, m.heads));
  }
  if (m.heads % m.kv_heads != 0) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("heads = {} must be a multiple of kv-heads = {}", m.heads, m.kv_heads));
  }
}

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::vector<ModelSpec> presets() {
  // Shapes from the LLaMA / LLaMA-2 and GPT-3 papers.
  return {
      {.name = "llama-7b", .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 32, .ffn_hidden = 11008,
       .vocab = 32000, .gated_mlp = true, .tied_embeddings = false, .seq = 2048},
      {.name = "llama-13b", .layers = 40, .hidden = 5120, .heads = 40, .kv_heads = 40, .ffn_hidden = 13824,
       .vocab = 32000, .gated_mlp = true, .tied_embeddings = false, .seq = 2048},
      {.name = "llama-70b", .layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn_hidden = 28672,
       .vocab = 32000, .gated_mlp = true, .tied_embeddings = false, .seq = 4096},
      {.name = "gpt3-175b", .layers = 96, .hidden = 12288, .heads = 96, .kv_heads = 96, .ffn_hidden = 49152,
       .vocab = 50257, .gated_mlp = false, .tied_embeddings = true, .seq = 2048},
  };
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const ModelSpec& m : presets()) names.push_back(m.name);
  return names;
}

ModelSpec model_preset(std::string_view name) {
  std::string key = lower(name);
  if (key == "gpt-3-175b" || key == "gpt3") key = "gpt3-175b";
  for (const ModelSpec& m : presets()) {
    if (m.name == key) return m;
  }
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("--model: unknown preset '{}' (llama-7b, llama-13b, llama-70b, gpt3-175b, or "
                                    "'custom' with --layers/--hidden/...)",
                                    name));
}

}  // namespace braid::plan
