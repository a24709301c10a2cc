#include "braid/tools/braid_serve/gpt_decoder.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/tools/braid_train/gpt_layers.h"

namespace braid::serve {
namespace {

constexpr const char* kOp = "gpt decoder";

template <class T>
T& layer_as(::torch::nn::Sequential& layers, std::size_t i, int rank) {
  T* layer = i < layers->size() ? dynamic_cast<T*>(layers[i].get()) : nullptr;
  if (layer == nullptr) throw InvalidArgument({.rank = rank, .op = kOp}, fmt::format("layer {} is not a GPT layer", i));
  return *layer;
}

train::ModelSpec checked_spec(::torch::nn::Sequential layers, const Communicator& tp) {
  train::ModelSpec spec = layer_as<train::gpt::Embeddings>(layers, 0, tp.rank()).spec();
  if (spec.heads % tp.size() != 0) {
    throw InvalidArgument({.rank = tp.rank(), .op = kOp},
                          fmt::format("tp {} does not divide the model's {} attention heads", tp.size(), spec.heads));
  }
  return spec;
}

KvBlockLayout layout_of(const train::ModelSpec& spec, int block_tokens) {
  return KvBlockLayout{.layers = static_cast<int>(spec.layers), .kv_heads = static_cast<int>(spec.heads),
                       .head_dim = static_cast<int>(spec.width / spec.heads), .block_tokens = block_tokens,
                       .element_bytes = 4};
}

std::int64_t pool_blocks(const train::ModelSpec& spec, const DecoderOptions& o) {
  if (o.cache_blocks > 0) return o.cache_blocks;
  return o.block_tokens > 0 ? (spec.context + o.block_tokens - 1) / o.block_tokens : 1;
}

}  // namespace

GptDecoder::GptDecoder(train::TrainModel& full, Communicator& tp, DecoderOptions options)
    : tp_(&tp),
      spec_(checked_spec(full.layers(), tp)),
      layers_(full.layers()),
      cache_(layout_of(spec_, options.block_tokens),
             torch::HeadRange{.first = static_cast<int>(tp.rank() * spec_.heads / tp.size()),
                              .count = static_cast<int>(spec_.heads / tp.size())},
             pool_blocks(spec_, options), tp.rank()) {
  blocks_.reserve(static_cast<std::size_t>(spec_.layers));
  for (int l = 0; l < spec_.layers; ++l) {
    blocks_.emplace_back(layer_as<train::gpt::Block>(layers_, static_cast<std::size_t>(l + 1), tp.rank()), tp, spec_, l);
  }
}

::torch::Tensor GptDecoder::prefill(SequenceId sequence, const std::vector<std::int64_t>& prompt, const LayerDone& layer_done) {
  if (prompt.empty()) throw InvalidArgument({.rank = tp_->rank(), .op = kOp}, fmt::format("sequence {}: empty prompt", sequence));
  if (cache_.length(sequence) != 0) {
    throw InvalidArgument({.rank = tp_->rank(), .op = kOp}, fmt::format("sequence {} was prefilled already", sequence));
  }
  return run(sequence, prompt, layer_done);
}

::torch::Tensor GptDecoder::step(SequenceId sequence, std::int64_t token) {
  if (cache_.length(sequence) == 0) {
    throw InvalidArgument({.rank = tp_->rank(), .op = kOp}, fmt::format("sequence {}: step before prefill", sequence));
  }
  return run(sequence, {token});
}

::torch::Tensor GptDecoder::run(SequenceId sequence, const std::vector<std::int64_t>& tokens, const LayerDone& layer_done) {
  std::int64_t first = cache_.length(sequence), t = static_cast<std::int64_t>(tokens.size());
  if (first + t > spec_.context) {
    throw InvalidArgument({.rank = tp_->rank(), .op = kOp},
                          fmt::format("sequence {}: {} tokens pass the model's context of {}", sequence, first + t,
                                      spec_.context));
  }
  for (std::int64_t token : tokens) {
    if (token < 0 || token >= spec_.vocab) {
      throw InvalidArgument({.rank = tp_->rank(), .op = kOp},
                            fmt::format("sequence {}: token {} outside the vocabulary of {}", sequence, token, spec_.vocab));
    }
  }
  ::torch::NoGradGuard no_grad;
  cache_.extend(sequence, t);
  auto& embeddings = layer_as<train::gpt::Embeddings>(layers_, 0, tp_->rank());
  ::torch::Tensor ids = ::torch::tensor(tokens, ::torch::kInt64).unsqueeze(0);
  ::torch::Tensor x = embeddings.tokens->forward(ids) +
                      embeddings.positions->forward(::torch::arange(first, first + t, ::torch::kInt64));
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    x = blocks_[l].forward(x, cache_, sequence, first);
    if (layer_done) layer_done(static_cast<int>(l));
  }
  std::size_t ln = static_cast<std::size_t>(spec_.layers + 1);
  ::torch::Tensor last = layers_[ln]->as<::torch::nn::LayerNorm>()->forward(x.select(1, t - 1));
  return layers_[ln + 1]->as<::torch::nn::Linear>()->forward(last).squeeze(0);
}

}  // namespace braid::serve
