// KV cache sizing for inference (seeds/004, "KV Cache 管理" and 3.3):
//   kv_per_token = 2 x L x n_kv_heads x d_head x bytes      (K and V for every layer)
//   kv_total     = kv_per_token x alive tokens
//   paged blocks = ceil(T / B), waste = ceil(T / B) x B - T slots (at most B - 1)
//   prefix reuse saves (N - 1) x P prefill tokens for N requests sharing a P-token prefix
//   chunked prefill runs ceil(prompt / chunk) chunks
//   paged bytes  = L x ceil(T / B) x block bytes, block bytes = 2 x n_kv_heads x B x d_head x bytes
//                  (base/kv_block_layout.h: a paged cache holds, and a transfer moves, whole blocks)
//   prefill/decode split (prefill TP p, decode TP d): a request moves its paged bytes (one
//                  sequence), paged bytes / p from each prefill rank, paged bytes / d into each decode rank,
//                  over p + d - gcd(p, d) (prefill rank, decode rank) pairs (serving/kv_transfer_plan.h)
#pragma once

#include "braid/plan/estimate.h"

namespace braid::plan {

struct KvInput {
  int layers = 80;
  int kv_heads = 8;
  int head_dim = 128;
  double bytes = 2;           // per element of the cache (fp16 2, fp8 1)
  double tokens = 2048;       // tokens per sequence (T)
  double sequences = 1;       // concurrent sequences: alive tokens = tokens x sequences
  int block_size = 16;        // paged-attention slots per block (B); 0: not paged
  double prefix_tokens = 0;   // shared prefix length (P)
  double requests = 1;        // requests sharing that prefix (N)
  double chunk_size = 0;      // chunked-prefill chunk (0: no chunking)
  int tp = 1;                 // KV heads split over tp ranks (per-device figures)
  int prefill_tp = 0;         // > 0 with decode_tp: the prefill-to-decode transfer per request
  int decode_tp = 0;
};

// kv_bytes_per_token, kv_bytes_total, and per device under tp; kv_blocks, kv_waste_slots and
// kv_waste_bytes when paged; prefix_saved_tokens / prefix_saved_bytes when a prefix is shared;
// prefill_chunks when chunked; kv_paged_bytes when paged; with prefill_tp and decode_tp (paged
// only) kv_transfer_bytes_per_request, _per_prefill_rank, _per_decode_rank and kv_transfer_pairs.
// Throws InvalidArgument for non-positive shapes or tp that does
// not divide kv_heads.
Estimates kv_cache(const KvInput& input);

}  // namespace braid::plan
