// A paged KV cache for LibTorch decoding (vLLM's PagedAttention memory model): every layer owns a
// pool of fixed-size blocks, a sequence owns a block table (the same block ids in every layer),
// and a block is handed out when a sequence grows past its last block and returned when it is
// freed, so sequences of any length share one preallocated pool without fragmentation.
//
// Memory: one contiguous tensor per layer, [num_blocks, 2, local_heads, block_tokens, head_dim]
// — block b of layer l is exactly one base/kv_block_layout.h block ([K|V][head][slot][head_dim])
// for this cache's head range, one byte range (block_span). The prefill-to-decode transfer
// (serving/) reads and writes those spans in place; nothing here copies them.
//
// Tensor parallelism: a TP rank caches only its own heads, the HeadRange [first, first + count)
// of the model's layout.kv_heads.
//
//   PagedKvCache cache(layout, HeadRange{.first = 0, .count = layout.kv_heads}, /*num_blocks=*/64);
//   cache.add_sequence(7);
//   cache.extend(7, prompt_tokens);            // blocks for the prompt, in every layer
//   cache.write(7, layer, /*first=*/0, k, v);  // k, v: [local_heads, tokens, head_dim]
//   ::torch::Tensor keys = cache.keys(7, layer);  // [local_heads, length, head_dim]
//   cache.free(7);
//
// Errors (InvalidArgument, the cache unchanged): an unknown or duplicate sequence, a pool too
// small (naming the sequence, the blocks asked and the blocks free), a write outside the
// sequence's length or with the wrong shape, a layer or block out of range.
//
// Thread-safety: none; one thread at a time (the decoder's).
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "braid/base/kv_block_layout.h"

namespace braid::torch {

struct HeadRange {
  int first = 0;  // the first KV head this cache holds (of the model's layout.kv_heads)
  int count = 0;
};

// One (layer, block) of the pool: layout.block_bytes(heads.count) bytes at `data`.
struct KvBlockSpan {
  std::byte* data = nullptr;
  std::int64_t bytes = 0;
};

class PagedKvCache {
 public:
  using SequenceId = std::int64_t;

  // The element type follows layout.element_bytes: 4 is f32, 2 is bf16. `rank` only names the
  // rank in errors (-1: none). InvalidArgument for a bad layout, head range or pool size.
  PagedKvCache(const KvBlockLayout& layout, HeadRange heads, std::int64_t num_blocks, int rank = -1);

  const KvBlockLayout& layout() const { return layout_; }
  HeadRange heads() const { return heads_; }
  ::torch::Dtype dtype() const { return dtype_; }
  std::int64_t num_blocks() const { return num_blocks_; }
  std::int64_t free_blocks() const { return static_cast<std::int64_t>(free_.size()); }
  std::int64_t used_blocks() const { return num_blocks_ - free_blocks(); }

  void add_sequence(SequenceId id);
  bool has_sequence(SequenceId id) const { return sequences_.count(id) != 0; }
  // Grows the sequence by `tokens` slots in every layer, taking blocks as needed (all or none).
  void extend(SequenceId id, std::int64_t tokens);
  std::int64_t length(SequenceId id) const;
  const std::vector<std::int64_t>& block_table(SequenceId id) const;
  // Returns the sequence's blocks to the pool and forgets it.
  void free(SequenceId id);

  // Stores K and V ([local_heads, n, head_dim], any dtype/layout: converted) of positions
  // [first, first + n) of `layer`; REQUIRES first + n <= length(id) (extend first).
  void write(SequenceId id, int layer, std::int64_t first, const ::torch::Tensor& k, const ::torch::Tensor& v);
  // The sequence's K (or V) of `layer`, gathered from its blocks: [local_heads, length, head_dim].
  ::torch::Tensor keys(SequenceId id, int layer) const { return gather(id, layer, 0); }
  ::torch::Tensor values(SequenceId id, int layer) const { return gather(id, layer, 1); }

  // The raw bytes of one (layer, block): what a transfer sends or receives, in place.
  KvBlockSpan block_span(int layer, std::int64_t block);
  // The whole pool of one layer: [num_blocks, 2, local_heads, block_tokens, head_dim].
  const ::torch::Tensor& layer_pool(int layer) const { return pools_.at(static_cast<std::size_t>(check_layer(layer))); }

 private:
  struct Sequence {
    std::int64_t length = 0;
    std::vector<std::int64_t> blocks;
  };
  const Sequence& sequence(SequenceId id, const char* op) const;
  Sequence& sequence(SequenceId id, const char* op);
  int check_layer(int layer) const;
  ::torch::Tensor gather(SequenceId id, int layer, std::int64_t k_or_v) const;

  KvBlockLayout layout_;
  HeadRange heads_;
  std::int64_t num_blocks_;
  int rank_;
  ::torch::Dtype dtype_;
  std::vector<::torch::Tensor> pools_;  // one per layer
  std::vector<std::int64_t> free_;      // a stack: the most recently freed block is reused first
  std::map<SequenceId, Sequence> sequences_;
};

}  // namespace braid::torch
