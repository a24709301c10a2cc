#include "braid/plan/kv_cache.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/kv_block_layout.h"
#include "braid/plan/units.h"

namespace braid::plan {
namespace {

void require_divides(int tp, int heads, const char* field) {
  if (heads % tp != 0) {
    throw InvalidArgument({.op = "braid-plan"}, fmt::format("{} = {} must divide kv-heads = {}", field, tp, heads));
  }
}

// The block geometry the cache and the transfer use (whole blocks), for a whole-byte precision.
KvBlockLayout paged_layout(const KvInput& in) {
  if (in.bytes != std::floor(in.bytes)) {
    throw InvalidArgument({.op = "braid-plan"}, fmt::format("paged figures need whole-byte elements, got {} B",
                                                            num(in.bytes)));
  }
  return {.layers = in.layers, .kv_heads = in.kv_heads, .head_dim = in.head_dim, .block_tokens = in.block_size,
          .element_bytes = static_cast<int>(in.bytes)};
}

void add_paged(const KvInput& in, Estimates& out) {
  const KvBlockLayout kv = paged_layout(in);
  const auto tokens = static_cast<std::int64_t>(std::ceil(in.tokens));
  const double request = static_cast<double>(kv.sequence_bytes(tokens, kv.kv_heads));
  out.push_back({"kv_paged_bytes", request * in.sequences, Unit::kBytes, "L x ceil(T / B) x block bytes per sequence",
                 fmt::format("{} x {} x {} B x {}", in.layers, kv.blocks_for(tokens), kv.block_bytes(kv.kv_heads),
                             num(in.sequences))});
  if (in.prefill_tp < 1 && in.decode_tp < 1) return;
  require_range("prefill-tp", in.prefill_tp, 1, in.kv_heads, "KV heads are split over the prefill ranks");
  require_range("decode-tp", in.decode_tp, 1, in.kv_heads, "KV heads are split over the decode ranks");
  require_divides(in.prefill_tp, in.kv_heads, "prefill-tp");
  require_divides(in.decode_tp, in.kv_heads, "decode-tp");
  out.push_back({"kv_transfer_bytes_per_request", request, Unit::kBytes, "paged bytes of one sequence",
                 fmt::format("{} x {} x {} B", in.layers, kv.blocks_for(tokens), kv.block_bytes(kv.kv_heads))});
  out.push_back({"kv_transfer_bytes_per_prefill_rank", request / in.prefill_tp, Unit::kBytes, "per request / prefill tp",
                 fmt::format("{} / {} B", num(request), in.prefill_tp)});
  out.push_back({"kv_transfer_bytes_per_decode_rank", request / in.decode_tp, Unit::kBytes, "per request / decode tp",
                 fmt::format("{} / {} B", num(request), in.decode_tp)});
  out.push_back({"kv_transfer_pairs", static_cast<double>(in.prefill_tp + in.decode_tp - std::gcd(in.prefill_tp, in.decode_tp)),
                 Unit::kCount, "p + d - gcd(p, d) (prefill, decode) rank pairs",
                 fmt::format("{} + {} - {}", in.prefill_tp, in.decode_tp, std::gcd(in.prefill_tp, in.decode_tp))});
}

}  // namespace

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
  require_divides(in.tp, in.kv_heads, "tp");
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
    add_paged(in, out);
  } else if (in.prefill_tp > 0 || in.decode_tp > 0) {
    throw InvalidArgument({.op = "braid-plan"}, "a prefill/decode transfer moves paged blocks: it needs --block-size > 0");
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
