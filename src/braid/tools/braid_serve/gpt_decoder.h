// KV-cached greedy decoding of braid-train's GPT over a TP group: prefill runs a prompt through
// every layer once, filling a paged cache (torch/paged_kv_cache.h) with this rank's heads of K
// and V, then each step runs one new token, attention reading the cache.
//
// The blocks are CachedBlock (sharded like make_tensor_parallel_gpt's); the embeddings, the final
// LayerNorm and the head stay whole on every rank (they are the full model's modules): the
// head's [vocab, width] product is small next to the blocks, and keeping it replicated spares the
// vocabulary-parallel allgather per token, so a step communicates only the blocks' two
// allreduces per layer. Every rank ends a step with the same logits, bit for bit (the
// allreduces leave identical bytes everywhere and what follows is replicated).
//
//   GptDecoder decoder(full_gpt, tp, {.block_tokens = 16});
//   decoder.start(0);
//   ::torch::Tensor logits = decoder.prefill(0, prompt);     // [vocab], the last position's
//   logits = decoder.step(0, logits.argmax().item<std::int64_t>());
//
// Errors (InvalidArgument naming the rank and what): tp not dividing the heads, a sequence that
// would pass the model's context, a token outside the vocabulary, a cache pool too small.
// Thread-safety: none.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/tools/braid_serve/cached_block.h"
#include "braid/tools/braid_train/models.h"
#include "braid/torch/paged_kv_cache.h"

namespace braid::serve {

struct DecoderOptions {
  int block_tokens = 16;
  std::int64_t cache_blocks = 0;  // the pool per layer; 0: enough for one full context
};

class GptDecoder {
 public:
  using SequenceId = torch::PagedKvCache::SequenceId;

  // REQUIRES: `full` was made by train::make_gpt (the same parameters on every rank); `full`
  // and `tp` outlive the decoder.
  GptDecoder(train::TrainModel& full, Communicator& tp, DecoderOptions options);

  const train::ModelSpec& spec() const { return spec_; }
  torch::PagedKvCache& cache() { return cache_; }

  void start(SequenceId sequence) { cache_.add_sequence(sequence); }
  // Called after each layer's K and V are in the cache (the prefill-to-decode stream sends that
  // layer then, while the next one computes).
  using LayerDone = std::function<void(int layer)>;
  // The logits [vocab] after the last prompt token; the prompt's K and V are in the cache.
  ::torch::Tensor prefill(SequenceId sequence, const std::vector<std::int64_t>& prompt, const LayerDone& layer_done = {});
  // Appends `token` to the sequence; the logits [vocab] after it.
  ::torch::Tensor step(SequenceId sequence, std::int64_t token);
  void finish(SequenceId sequence) { cache_.free(sequence); }

 private:
  ::torch::Tensor run(SequenceId sequence, const std::vector<std::int64_t>& tokens, const LayerDone& layer_done = {});

  Communicator* tp_;
  train::ModelSpec spec_;
  ::torch::nn::Sequential layers_;  // the full model's
  std::vector<CachedBlock> blocks_;
  torch::PagedKvCache cache_;
};

}  // namespace braid::serve
