// The single-process GPT (gpt_layers.h). Sizes: ModelSpec (--model gpt: width 128, 4 heads, 6
// layers, context 64, about 1.2 M parameters for ~100 tokens; gpt-small: 512, 8, 8, 128, about
// 25 M).
#include <fmt/format.h>

#include <cmath>

#include "braid/base/error.h"
#include "braid/tools/braid_train/gpt_layers.h"

namespace braid::train {
namespace gpt {

namespace nn = ::torch::nn;

::torch::Tensor replicated_dropout(const ::torch::Tensor& x, const ModelSpec& spec, bool training) {
  if (spec.dropout == 0) return x;
  return torch::TensorParallelRng::dropout(x, spec.dropout, training, spec.rng->replicated());
}

CausalSelfAttention::CausalSelfAttention(const ModelSpec& spec)
    : qkv(register_module("qkv", nn::Linear(spec.width, 3 * spec.width))),
      proj(register_module("proj", nn::Linear(spec.width, spec.width))),
      spec_(spec),
      // Position j may attend to i only when i <= j. A buffer, so DDP checks it too.
      mask_(register_buffer("mask", ::torch::tril(::torch::ones({spec.context, spec.context}, ::torch::kBool)))) {}

::torch::Tensor CausalSelfAttention::forward(const ::torch::Tensor& x) {
  std::int64_t b = x.size(0), t = x.size(1), head = spec_.width / spec_.heads;
  // [b, t, 3, heads, head] -> three [b, heads, t, head]
  std::vector<::torch::Tensor> q_k_v = qkv->forward(x).view({b, t, 3, spec_.heads, head}).permute({2, 0, 3, 1, 4}).unbind(0);
  ::torch::Tensor scores = ::torch::matmul(q_k_v[0], q_k_v[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head));
  using ::torch::indexing::Slice;
  scores = scores.masked_fill(mask_.index({Slice(0, t), Slice(0, t)}).logical_not(), -INFINITY);
  ::torch::Tensor probs = ::torch::softmax(scores, -1);
  if (spec_.dropout > 0) probs = torch::TensorParallelRng::dropout(probs, spec_.dropout, is_training(), spec_.rng->tensor_parallel());
  ::torch::Tensor mixed = ::torch::matmul(probs, q_k_v[2]);
  return proj->forward(mixed.transpose(1, 2).reshape({b, t, spec_.width}));
}

Block::Block(const ModelSpec& spec)
    : ln1(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({spec.width})))),
      attention(register_module("attention", std::make_shared<CausalSelfAttention>(spec))),
      ln2(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({spec.width})))),
      up(register_module("up", nn::Linear(spec.width, 4 * spec.width))),
      down(register_module("down", nn::Linear(4 * spec.width, spec.width))),
      spec_(spec) {}

::torch::Tensor Block::forward(::torch::Tensor x) {
  x = x + replicated_dropout(attention->forward(ln1->forward(x)), spec_, is_training());
  return x + replicated_dropout(down->forward(::torch::gelu(up->forward(ln2->forward(x)))), spec_, is_training());
}

Embeddings::Embeddings(const ModelSpec& spec)
    : tokens(register_module("tokens", nn::Embedding(spec.vocab, spec.width))),
      positions(register_module("positions", nn::Embedding(spec.context, spec.width))),
      spec_(spec) {}

::torch::Tensor Embeddings::forward(::torch::Tensor input) {
  ::torch::Tensor position = ::torch::arange(input.size(1), ::torch::kInt64);
  return replicated_dropout(tokens->forward(input) + positions->forward(position), spec_, is_training());
}

}  // namespace gpt

// Embeddings, the blocks, the final LayerNorm and the head, as one Sequential: layers + 3
// layers that pipeline parallelism can cut anywhere.
std::shared_ptr<TrainModel> make_gpt(const ModelSpec& spec) {
  if (spec.dropout > 0 && spec.rng == nullptr) throw InvalidArgument({.op = "make_gpt"}, "dropout without an rng");
  if (spec.heads < 1 || spec.width % spec.heads != 0) {
    throw InvalidArgument({.op = "make_gpt"}, fmt::format("width {} does not split into {} heads", spec.width, spec.heads));
  }
  ::torch::nn::Sequential layers;
  layers->push_back("embeddings", std::make_shared<gpt::Embeddings>(spec));
  for (std::int64_t i = 0; i < spec.layers; ++i) layers->push_back("block" + std::to_string(i), std::make_shared<gpt::Block>(spec));
  layers->push_back("ln", ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({spec.width})));
  layers->push_back("head", ::torch::nn::Linear(spec.width, spec.vocab));
  return std::make_shared<TrainModel>(layers);
}

}  // namespace braid::train
