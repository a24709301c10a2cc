// The GPT of gpt_layers.h (and moe-gpt's, whose MoE blocks keep their MoE layer whole) split over
// a TP group, Megatron-LM style: the token embedding and the
// head over the (padded) vocabulary, attention over heads, the MLP's up projection over its
// output features and its down projection over its input features; LayerNorms and the position
// embedding replicated. Four allreduces per block and micro-batch (two forward, two backward),
// one forward for the embedding, one backward for the head, and the cross-entropy's three small
// ones (docs/tensor-parallel.md counts them; plan/training_traffic.h predicts them).
//
// With sequence parallelism the residual stream between blocks is split along the sequence
// ([b, t/tp, h] per rank): LayerNorms and residual dropout run on the shard, each allreduce
// becomes an allgather before a column-parallel layer and a reduce-scatter after a row-parallel
// one, and the replicated parameters' gradients are partial sums (the trainer sums them over TP:
// torch::sync_sequence_parallel_gradients).
//
// Dropout: inside a TP region (attention probabilities on a rank's own heads) and on sequence
// shards it draws from the rng's TP stream; on the replicated residual stream from its
// replicated stream, so every TP rank drops the same elements.
#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/torch/parallel_attention.h"
#include "braid/torch/tensor_parallel_layers.h"
#include "braid/torch/tensor_parallel_mappings.h"
#include "braid/torch/vocab_parallel.h"
#include "braid/tools/braid_train/gpt_layers.h"
#include "braid/tools/braid_train/moe_gpt_block.h"

namespace braid::train {
namespace {

namespace nn = ::torch::nn;
using torch::LinearWeights;

constexpr std::int64_t kSequenceDim = 1;  // activations are [batch, seq, width]

// The dropout of tensors outside the TP regions: replicated, unless they are sequence shards.
struct ResidualDropout {
  double p = 0;
  bool sequence_parallel = false;
  torch::TensorParallelRng* rng = nullptr;
  ::torch::Tensor operator()(const ::torch::Tensor& x, bool training) const {
    if (p == 0) return x;
    return torch::TensorParallelRng::dropout(x, p, training, sequence_parallel ? rng->tensor_parallel() : rng->replicated());
  }
};

nn::LayerNorm copy_layer_norm(const nn::LayerNorm& full) {
  nn::LayerNorm copy(full->options);
  ::torch::NoGradGuard no_grad;
  copy->weight.copy_(full->weight);
  copy->bias.copy_(full->bias);
  return copy;
}

void copy_layer_norm_into(const nn::LayerNorm& from, nn::LayerNorm& to) {
  ::torch::NoGradGuard no_grad;
  to->weight.copy_(from->weight);
  to->bias.copy_(from->bias);
}

class TpEmbeddings : public nn::Module {
 public:
  TpEmbeddings(Communicator& tp, gpt::Embeddings& full, const TensorParallelOptions& o, double dropout)
      : tokens(register_module("tokens", torch::VocabParallelEmbedding(tp, full.tokens,
                                                                       torch::VocabParallelOptions{
                                                                           .sequence_parallel = o.sequence_parallel}))),
        positions(register_parameter("positions", full.positions->weight.detach().clone())),
        tp_(&tp),
        sequence_parallel_(o.sequence_parallel),
        dropout_{dropout, o.sequence_parallel, o.rng} {}

  ::torch::Tensor forward(const ::torch::Tensor& input) {
    ::torch::Tensor x = tokens->forward(input);  // [b, t, h], or this rank's [b, t/tp, h]
    std::int64_t first = sequence_parallel_ ? tp_->rank() * x.size(kSequenceDim) : 0;
    return dropout_(x + positions.narrow(0, first, x.size(kSequenceDim)), is_training());
  }

  void unshard_into(gpt::Embeddings& full) {
    tokens->gather_into(full.tokens);
    ::torch::NoGradGuard no_grad;
    full.positions->weight.copy_(positions);
  }

  torch::VocabParallelEmbedding tokens;
  ::torch::Tensor positions;  // [context, h], replicated

 private:
  Communicator* tp_;
  bool sequence_parallel_;
  ResidualDropout dropout_;
};

torch::ParallelSelfAttention parallel_attention(Communicator& tp, gpt::CausalSelfAttention& full, const ModelSpec& spec,
                                                const TensorParallelOptions& o, const std::string& name) {
  return torch::ParallelSelfAttention(
      tp, LinearWeights::of(full.qkv), LinearWeights::of(full.proj),
      torch::ParallelAttentionOptions{.heads = spec.heads, .context = spec.context, .sequence_parallel = o.sequence_parallel,
                                      .dropout = spec.dropout, .rng = o.rng, .name = name + " attention"});
}

class TpBlock : public nn::Module {
 public:
  TpBlock(Communicator& tp, gpt::Block& full, const ModelSpec& spec, const TensorParallelOptions& o, const std::string& name)
      : ln1(register_module("ln1", copy_layer_norm(full.ln1))),
        attention(register_module("attention", parallel_attention(tp, *full.attention, spec, o, name))),
        ln2(register_module("ln2", copy_layer_norm(full.ln2))),
        up(register_module("up", torch::ColumnParallelLinear(tp, LinearWeights::of(full.up),
                                                             torch::ColumnParallelOptions{
                                                                 .sequence_parallel = o.sequence_parallel,
                                                                 .name = name + " MLP up"}))),
        down(register_module("down", torch::RowParallelLinear(tp, LinearWeights::of(full.down),
                                                              torch::RowParallelOptions{
                                                                  .sequence_parallel = o.sequence_parallel,
                                                                  .name = name + " MLP down"}))),
        dropout_{spec.dropout, o.sequence_parallel, o.rng} {}

  ::torch::Tensor forward(::torch::Tensor x) {
    x = x + dropout_(attention->forward(ln1->forward(x)), is_training());
    return x + dropout_(down->forward(::torch::gelu(up->forward(ln2->forward(x)))), is_training());
  }

  void unshard_into(gpt::Block& full) {
    copy_layer_norm_into(ln1, full.ln1);
    copy_layer_norm_into(ln2, full.ln2);
    attention->qkv->gathered().copy_into(full.attention->qkv);
    attention->proj->gathered().copy_into(full.attention->proj);
    up->gathered().copy_into(full.up);
    down->gathered().copy_into(full.down);
  }

  nn::LayerNorm ln1;
  torch::ParallelSelfAttention attention;
  nn::LayerNorm ln2;
  torch::ColumnParallelLinear up;
  torch::RowParallelLinear down;

 private:
  ResidualDropout dropout_;
};

// moe-gpt's MoE block on a TP group: the attention split as TpBlock's, the MoE layer the very
// module of the single-process block (not TP-split: every tp rank routes the same replicated
// tokens over its own EP group, docs/moe.md), so the full model shares its experts and gate.
// No dropout and no sequence parallelism (moe-gpt refuses both).
class TpMoeBlock : public nn::Module {
 public:
  TpMoeBlock(Communicator& tp, MoeBlock& full, const ModelSpec& spec, const TensorParallelOptions& o, const std::string& name)
      : ln1(register_module("ln1", copy_layer_norm(full.ln1))),
        attention(register_module("attention", parallel_attention(tp, *full.attention, spec, o, name))),
        ln2(register_module("ln2", copy_layer_norm(full.ln2))),
        moe(register_module("moe", full.moe)) {}

  ::torch::Tensor forward(::torch::Tensor x) {
    x = x + attention->forward(ln1->forward(x));
    return x + moe->forward(ln2->forward(x));
  }

  void unshard_into(MoeBlock& full) {
    copy_layer_norm_into(ln1, full.ln1);
    copy_layer_norm_into(ln2, full.ln2);
    attention->qkv->gathered().copy_into(full.attention->qkv);
    attention->proj->gathered().copy_into(full.attention->proj);
  }

  nn::LayerNorm ln1;
  torch::ParallelSelfAttention attention;
  nn::LayerNorm ln2;
  torch::MoeLayer moe;
};

// The head over the padded vocabulary: [b, t, h] (or a sequence shard, gathered first) ->
// this rank's logits [b, t, Vp / tp].
torch::ColumnParallelLinear tp_head(Communicator& tp, const nn::Linear& full, const TensorParallelOptions& o) {
  return torch::ColumnParallelLinear(tp, torch::padded_head(LinearWeights::of(full), tp.size()),
                                     torch::ColumnParallelOptions{.sequence_parallel = o.sequence_parallel,
                                                                  .name = "the output head"});
}

template <class T>
T& layer_as(nn::Sequential& layers, std::size_t i) {
  T* layer = dynamic_cast<T*>(layers[i].get());
  if (layer == nullptr) throw InvalidArgument({.op = "tensor-parallel gpt"}, fmt::format("layer {} is not a GPT layer", i));
  return *layer;
}

}  // namespace

std::shared_ptr<TrainModel> make_tensor_parallel_gpt(TrainModel& full, Communicator& tp, TensorParallelOptions options) {
  nn::Sequential from = full.layers(), layers;
  auto& embeddings = layer_as<gpt::Embeddings>(from, 0);
  ModelSpec spec = embeddings.spec();
  layers->push_back("embeddings", std::make_shared<TpEmbeddings>(tp, embeddings, options, spec.dropout));
  for (std::int64_t i = 0; i < spec.layers; ++i) {
    std::string name = "block" + std::to_string(i);
    auto i1 = static_cast<std::size_t>(i + 1);
    if (auto* moe = dynamic_cast<MoeBlock*>(from[i1].get())) {  // moe-gpt's odd blocks
      layers->push_back(name, std::make_shared<TpMoeBlock>(tp, *moe, spec, options, name));
    } else {
      layers->push_back(name, std::make_shared<TpBlock>(tp, layer_as<gpt::Block>(from, i1), spec, options, name));
    }
  }
  std::size_t ln = static_cast<std::size_t>(spec.layers + 1);
  layers->push_back("ln", copy_layer_norm(nn::LayerNorm(from->ptr<nn::LayerNormImpl>(ln))));
  layers->push_back("head", tp_head(tp, nn::Linear(from->ptr<nn::LinearImpl>(ln + 1)), options));
  return std::make_shared<TrainModel>(layers);
}

void unshard_tensor_parallel_gpt(TrainModel& sharded, TrainModel& full) {
  nn::Sequential from = sharded.layers(), to = full.layers();
  layer_as<TpEmbeddings>(from, 0).unshard_into(layer_as<gpt::Embeddings>(to, 0));
  std::size_t blocks = from->size() - 3;
  for (std::size_t i = 1; i <= blocks; ++i) {
    if (auto* moe = dynamic_cast<TpMoeBlock*>(from[i].get())) {
      moe->unshard_into(layer_as<MoeBlock>(to, i));
    } else {
      layer_as<TpBlock>(from, i).unshard_into(layer_as<gpt::Block>(to, i));
    }
  }
  nn::LayerNorm ln(to->ptr<nn::LayerNormImpl>(blocks + 1));
  copy_layer_norm_into(nn::LayerNorm(from->ptr<nn::LayerNormImpl>(blocks + 1)), ln);
  auto head = from->ptr<torch::ColumnParallelLinearImpl>(blocks + 2);
  nn::Linear full_head(to->ptr<nn::LinearImpl>(blocks + 2));
  head->gathered().copy_into(full_head, full_head->options.out_features());
}

}  // namespace braid::train
