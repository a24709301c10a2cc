// Which bytes of a prompt's KV cache move from which prefill rank to which decode rank, when
// prefill runs with tensor-parallel size p and decode with d (DistServe, vLLM and SGLang
// prefill/decode disaggregation; Mooncake's transfer engine moves the same (layer, block) units).
//
// KV heads are split contiguously over TP ranks: rank r of TP t holds the global heads
// [r H/t, (r + 1) H/t). A prefill rank and a decode rank exchange the heads both hold, for every
// block of every layer; a block is [K|V][head][slot][head_dim] (base/kv_block_layout.h), so a
// head range is one contiguous K slice and one contiguous V slice of each side's block, merged
// into one segment when both sides hold exactly the same heads (p == d: the whole block).
//
//   KvTransferPlan plan = make_kv_transfer_plan(layout, /*tokens=*/100, /*prefill_tp=*/2, /*decode_tp=*/1);
//   plan.pairs;                 // {0 -> 0, heads [0, 2)}, {1 -> 0, heads [2, 4)}
//   plan.segments(plan.pairs[1]);  // K: source 0 -> target 2 slices, V: source 2 -> target 6 slices
//   plan.total_bytes();         // == layout.sequence_bytes(100, layout.kv_heads)
//
// A plan is a value made by a pure function: the executor (kv_stream_*.h) and braid-plan kv read
// the same numbers. Thread-safety: an immutable value.
#pragma once

#include <cstdint>
#include <vector>

#include "braid/base/kv_block_layout.h"

namespace braid::serving {

// One (prefill TP rank, decode TP rank) pair's share of every block of every layer.
struct KvTransferPair {
  int prefill_rank = 0;  // in the prefill TP group
  int decode_rank = 0;   // in the decode TP group
  int first_head = 0;    // global KV head
  int heads = 0;
  int source_head = 0;   // first_head's index among the prefill rank's heads
  int target_head = 0;   // ... among the decode rank's heads
};

// A contiguous byte range of one block: from offset source_offset of the prefill rank's block
// to target_offset of the decode rank's block.
struct KvSegment {
  std::int64_t source_offset = 0;
  std::int64_t target_offset = 0;
  std::int64_t bytes = 0;
};

struct KvTransferPlan {
  KvBlockLayout layout;
  std::int64_t tokens = 0;
  int prefill_tp = 1;
  int decode_tp = 1;
  std::int64_t blocks = 0;             // per layer: layout.blocks_for(tokens)
  std::vector<KvTransferPair> pairs;   // ordered by (prefill_rank, decode_rank)

  int prefill_heads() const { return layout.kv_heads / prefill_tp; }  // heads per prefill rank
  int decode_heads() const { return layout.kv_heads / decode_tp; }
  // The segments of one block of `pair`, in increasing source offset (1 or 2).
  std::vector<KvSegment> segments(const KvTransferPair& pair) const;
  // One block of one layer of `pair`: its K and V slices.
  std::int64_t pair_block_bytes(const KvTransferPair& pair) const { return layout.block_bytes(pair.heads); }
  // Every layer and block of `pair`.
  std::int64_t pair_bytes(const KvTransferPair& pair) const { return layout.layers * blocks * pair_block_bytes(pair); }
  std::int64_t total_bytes() const;    // == layout.sequence_bytes(tokens, layout.kv_heads)
  // The pairs a prefill rank sends (a decode rank receives), in plan order.
  std::vector<KvTransferPair> pairs_from(int prefill_rank) const;
  std::vector<KvTransferPair> pairs_to(int decode_rank) const;
};

// InvalidArgument ({.op = "kv transfer plan"}) for a bad layout, tokens < 1, a TP size < 1 or one
// that does not divide the layout's KV heads.
KvTransferPlan make_kv_transfer_plan(const KvBlockLayout& layout, std::int64_t tokens, int prefill_tp, int decode_tp);

}  // namespace braid::serving
