// A GPT-style decoder (Radford et al. 2019 layout, pre-norm): token + learned position
// embeddings, `layers` blocks of causal multi-head self-attention and a 4x MLP with GELU, each
// behind a LayerNorm and a residual connection, a final LayerNorm and a linear head.
// Defaults: width 128, 4 heads, 6 layers, context 64: about 1.2 M parameters for ~100 tokens.
#include <cmath>

#include "braid/tools/braid_train/models.h"

namespace braid::train {
namespace {

namespace nn = ::torch::nn;

constexpr std::int64_t kWidth = 128, kHeads = 4, kLayers = 6;

class CausalSelfAttention : public nn::Module {
 public:
  explicit CausalSelfAttention(std::int64_t context)
      : qkv_(register_module("qkv", nn::Linear(kWidth, 3 * kWidth))),
        proj_(register_module("proj", nn::Linear(kWidth, kWidth))),
        // Position j may attend to i only when i <= j. A buffer, so DDP checks it too.
        mask_(register_buffer("mask", ::torch::tril(::torch::ones({context, context}, ::torch::kBool)))) {}

  ::torch::Tensor forward(const ::torch::Tensor& x) {
    std::int64_t b = x.size(0), t = x.size(1), head = kWidth / kHeads;
    // [b, t, 3, heads, head] -> three [b, heads, t, head]
    std::vector<::torch::Tensor> qkv = qkv_->forward(x).view({b, t, 3, kHeads, head}).permute({2, 0, 3, 1, 4}).unbind(0);
    ::torch::Tensor scores = ::torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head));
    using ::torch::indexing::Slice;
    scores = scores.masked_fill(mask_.index({Slice(0, t), Slice(0, t)}).logical_not(), -INFINITY);
    ::torch::Tensor mixed = ::torch::matmul(::torch::softmax(scores, -1), qkv[2]);
    return proj_->forward(mixed.transpose(1, 2).reshape({b, t, kWidth}));
  }

 private:
  nn::Linear qkv_, proj_;
  ::torch::Tensor mask_;
};

class Block : public nn::Module {
 public:
  explicit Block(std::int64_t context)
      : ln1_(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({kWidth})))),
        attention_(register_module("attention", std::make_shared<CausalSelfAttention>(context))),
        ln2_(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({kWidth})))),
        up_(register_module("up", nn::Linear(kWidth, 4 * kWidth))),
        down_(register_module("down", nn::Linear(4 * kWidth, kWidth))) {}

  ::torch::Tensor forward(::torch::Tensor x) {
    x = x + attention_->forward(ln1_->forward(x));
    return x + down_->forward(::torch::gelu(up_->forward(ln2_->forward(x))));
  }

 private:
  nn::LayerNorm ln1_;
  std::shared_ptr<CausalSelfAttention> attention_;
  nn::LayerNorm ln2_;
  nn::Linear up_, down_;
};

// Token embedding plus learned position embedding: the first layer of the Sequential.
class Embeddings : public nn::Module {
 public:
  Embeddings(std::int64_t vocab, std::int64_t context)
      : tokens_(register_module("tokens", nn::Embedding(vocab, kWidth))),
        positions_(register_module("positions", nn::Embedding(context, kWidth))) {}

  ::torch::Tensor forward(::torch::Tensor tokens) {
    ::torch::Tensor position = ::torch::arange(tokens.size(1), ::torch::kInt64);
    return tokens_->forward(tokens) + positions_->forward(position);
  }

 private:
  nn::Embedding tokens_, positions_;
};

}  // namespace

// Embeddings, the blocks, the final LayerNorm and the head, as one Sequential: 9 layers that
// pipeline parallelism can cut anywhere.
std::shared_ptr<TrainModel> make_gpt(std::int64_t vocab, std::int64_t context) {
  nn::Sequential layers;
  layers->push_back("embeddings", std::make_shared<Embeddings>(vocab, context));
  for (std::int64_t i = 0; i < kLayers; ++i) layers->push_back("block" + std::to_string(i), std::make_shared<Block>(context));
  layers->push_back("ln", nn::LayerNorm(nn::LayerNormOptions({kWidth})));
  layers->push_back("head", nn::Linear(kWidth, vocab));
  return std::make_shared<TrainModel>(layers);
}

}  // namespace braid::train
