// The single-process GPT's layers (gpt_model.cc), shared with their tensor-parallel twins
// (tensor_parallel_gpt.cc), which are built from them and gathered back into them.
//
// A GPT-style decoder (Radford et al. 2019 layout, pre-norm): token + learned position
// embeddings, `layers` blocks of causal multi-head self-attention and a 4x MLP with GELU, each
// behind a LayerNorm and a residual connection, a final LayerNorm and a linear head. Dropout
// (ModelSpec::dropout) after the embeddings, on the attention probabilities and on each residual
// branch, as in GPT-2.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "braid/tools/braid_train/models.h"

namespace braid::train::gpt {

class CausalSelfAttention : public ::torch::nn::Module {
 public:
  explicit CausalSelfAttention(const ModelSpec& spec);
  ::torch::Tensor forward(const ::torch::Tensor& x);

  ::torch::nn::Linear qkv{nullptr}, proj{nullptr};

 private:
  ModelSpec spec_;
  ::torch::Tensor mask_;
};

class Block : public ::torch::nn::Module {
 public:
  explicit Block(const ModelSpec& spec);
  ::torch::Tensor forward(::torch::Tensor x);

  ::torch::nn::LayerNorm ln1{nullptr};
  std::shared_ptr<CausalSelfAttention> attention;
  ::torch::nn::LayerNorm ln2{nullptr};
  ::torch::nn::Linear up{nullptr}, down{nullptr};

 private:
  ModelSpec spec_;
};

// Token embedding plus learned position embedding: the first layer of the Sequential.
class Embeddings : public ::torch::nn::Module {
 public:
  explicit Embeddings(const ModelSpec& spec);
  ::torch::Tensor forward(::torch::Tensor tokens);
  const ModelSpec& spec() const { return spec_; }

  ::torch::nn::Embedding tokens{nullptr}, positions{nullptr};

 private:
  ModelSpec spec_;
};

// Dropout from the replicated stream of `spec.rng` (nothing without dropout or outside training).
::torch::Tensor replicated_dropout(const ::torch::Tensor& x, const ModelSpec& spec, bool training);

}  // namespace braid::train::gpt
