// The paged KV cache's geometry, the one definition that three places share: the LibTorch
// decoder's cache (torch/), the prefill-to-decode transfer (serving/) and braid-plan kv (plan/
// depends on base/ only, which is why this lives here; see mesh_layout.h for the same reason).
//
// A sequence's cache is a list of blocks; every layer has its own blocks. One block of one layer
// holds `block_tokens` token slots of K and then of V for a contiguous range of KV heads, laid
// out [K|V][head][slot][head_dim], so that
//   - one (layer, block) is one contiguous byte range: the unit of a layer-by-layer transfer;
//   - a head range inside K (or V) is contiguous too: resharding between TP sizes moves whole
//     head slices, never single elements.
//
//   KvBlockLayout kv{.layers = 6, .kv_heads = 4, .head_dim = 32, .block_tokens = 16,
//                    .element_bytes = 4};
//   kv.blocks_for(100);               // 7: ceil(100 / 16)
//   kv.block_bytes(kv.kv_heads);      // 2 x 4 x 16 x 32 x 4 = 16384
//   kv.sequence_bytes(100, 4);        // 6 layers x 7 blocks x 16384
//
// The bytes a paged cache holds (and a transfer moves) are whole blocks: the last block's unused
// slots are part of it. plan::kv_cache's paged figures count the same slots.
//
// Thread-safety: an immutable value.
#pragma once

#include <cstdint>
#include <string>

namespace braid {

struct KvBlockLayout {
  int layers = 0;
  int kv_heads = 0;       // KV heads of the whole model (all TP ranks together)
  int head_dim = 0;
  int block_tokens = 0;   // token slots per block (vLLM's block size)
  int element_bytes = 0;  // 4 for f32, 2 for bf16/f16

  // InvalidArgument naming the field when any of them is < 1 (`op` names the caller).
  void validate(const char* op) const;
  std::string describe() const;  // "6 layers x 4 heads x 32 dims, 16-token blocks, 4 B"

  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + block_tokens - 1) / block_tokens; }
  // One layer's block for `heads` heads: K and V.
  std::int64_t block_bytes(int heads) const {
    return std::int64_t{2} * heads * block_tokens * head_dim * element_bytes;
  }
  // Bytes of one head slice of K (or of V) inside a block.
  std::int64_t head_slice_bytes() const { return std::int64_t{block_tokens} * head_dim * element_bytes; }
  // Every layer's blocks of a `tokens`-long sequence, for `heads` heads.
  std::int64_t sequence_bytes(std::int64_t tokens, int heads) const {
    return layers * blocks_for(tokens) * block_bytes(heads);
  }
};

}  // namespace braid
