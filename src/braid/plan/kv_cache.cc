#include "braid/plan/kv_cache.h"

#include <cmath>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

Estimates kv_cache(const KvInput& in) {
  require_range("layers", in.layers, 1, 1e5);
  require_range("kv-heads", in.kv_heads, 1, 1e5);
  require_range("head-dim", in.head_dim, 1, 1e5);
  require_range("kv bytes", in.bytes, 0.125, 8);
  require_range("tokens", in.tokens, 1, 1e12);
  require_range("sequences", in.sequences, 1, 1e9);
  require_range("block-size", in.block_size, 0, 1e6, "0 disables paging");
  require_range("prefix", in.prefix_tokens, 0, in.tokens, "a prefix is part of the sequence");
  require_range("requests", in.requests, 1, 1e9);
  require_range("chunk", in.chunk_size, 0, 1e12, "0 disables chunked prefill");
  require_range("tp", in.tp, 1, in.kv_heads, "KV heads are split over tp ranks");
  if (in.kv_heads % in.tp != 0) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("tp = {} must divide kv-heads = {}", in.tp, in.kv_heads));
  }
  const double per_token = 2.0 * in.layers * in.kv_heads * in.head_dim * in.bytes;
  const double alive = in.tokens * in.sequences;
  Estimates out;
  out.push_back({"kv_bytes_per_token", per_token, Unit::kBytes, "2 x L x n_kv_heads x d_head x bytes",
                 fmt::format("2 x {} x {} x {} x {} B", in.layers, in.kv_heads, in.head_dim, num(in.bytes))});
  out.push_back({"kv_bytes_total", per_token * alive, Unit::kBytes, "kv_per_token x alive tokens",
                 fmt::format("{} x {} x {} B", num(per_token), num(in.tokens), num(in.sequences))});
  if (in.tp > 1) {
    out.push_back({"kv_bytes_per_device", per_token * alive / in.tp, Unit::kBytes, "kv_total / tp",
                   fmt::format("{} / {} B", num(per_token * alive), in.tp)});
  }
  if (in.block_size > 0) {
    const double blocks = std::ceil(in.tokens / in.block_size);
    const double waste = blocks * in.block_size - in.tokens;
    out.push_back({"kv_blocks", blocks * in.sequences, Unit::kCount, "ceil(T / B) per sequence",
                   fmt::format("ceil({} / {}) x {}", num(in.tokens), in.block_size, num(in.sequences))});
    out.push_back({"kv_waste_slots", waste * in.sequences, Unit::kCount, "ceil(T / B) x B - T per sequence",
                   fmt::format("({} x {} - {}) x {}", num(blocks), in.block_size, num(in.tokens), num(in.sequences))});
    out.push_back({"kv_waste_bytes", waste * in.sequences * per_token, Unit::kBytes, "waste slots x kv_per_token",
                   fmt::format("{} x {} B", num(waste * in.sequences), num(per_token))});
  }
  if (in.prefix_tokens > 0 && in.requests > 1) {
    const double saved = (in.requests - 1) * in.prefix_tokens;
    out.push_back({"prefix_saved_tokens", saved, Unit::kCount, "(N - 1) x P",
                   fmt::format("({} - 1) x {}", num(in.requests), num(in.prefix_tokens))});
    out.push_back({"prefix_saved_bytes", saved * per_token, Unit::kBytes, "(N - 1) x P x kv_per_token",
                   fmt::format("{} x {} B", num(saved), num(per_token))});
  }
  if (in.chunk_size > 0) {
    out.push_back({"prefill_chunks", std::ceil(in.tokens / in.chunk_size), Unit::kCount, "ceil(prompt / chunk)",
                   fmt::format("ceil({} / {})", num(in.tokens), num(in.chunk_size))});
  }
  return out;
}

}  // namespace braid::plan
