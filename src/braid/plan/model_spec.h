// The shape of a transformer being planned, and presets for well-known models.
//
// Parameter count per layer: attention h x h (Q) + 2 x h x kv_heads x d_head (K, V) + h x h (O),
// MLP 3 x h x ffn when gated (SwiGLU: LLaMA) else 2 x h x ffn (GPT), plus the embedding
// (vocab x h) and an untied output head of the same size when the model has one (LLaMA).
// Norms and biases are left out (< 0.1%). This reproduces LLaMA-7B 6.74e9, LLaMA-13B 13.0e9,
// LLaMA-70B 69.0e9 and GPT-3 174.6e9.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace braid::plan {

struct ModelSpec {
  std::string name = "custom";
  int layers = 32;
  int hidden = 4096;
  int heads = 32;
  int kv_heads = 32;  // < heads with grouped-query attention
  int ffn_hidden = 11008;
  int vocab = 32000;
  bool gated_mlp = true;
  bool tied_embeddings = false;
  int seq = 2048;
  double params_override = 0;  // > 0: use this parameter count instead of the shape's

  int head_dim() const { return hidden / heads; }
  double params() const;
  // Training FLOP for one sequence: 6 x params x seq (forward 2, backward 4 per parameter and
  // token) + 12 x layers x hidden x seq^2 (attention scores and their backward).
  double train_flops_per_sequence() const;
};

// Throws InvalidArgument naming the field and its valid range for anything non-positive or
// inconsistent (hidden not divisible by heads, heads not divisible by kv_heads).
void validate(const ModelSpec& model);

// "llama-7b", "llama-13b", "llama-70b", "gpt3-175b" (case-insensitive; "gpt-3-175b" too).
// Throws InvalidArgument listing the presets for an unknown name.
ModelSpec model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

}  // namespace braid::plan
