#include "braid/serving/kv_transfer_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "braid/base/error.h"

namespace braid::serving {
namespace {

constexpr const char* kOp = "kv transfer plan";

void check_tp(const KvBlockLayout& layout, int tp, const char* which) {
  if (tp < 1 || layout.kv_heads % tp != 0) {
    throw InvalidArgument({.op = kOp}, fmt::format("{} TP size {} must be at least 1 and divide the {} KV heads", which,
                                                   tp, layout.kv_heads));
  }
}

}  // namespace

std::vector<KvSegment> KvTransferPlan::segments(const KvTransferPair& pair) const {
  const std::int64_t slice = layout.head_slice_bytes();
  const std::int64_t bytes = pair.heads * slice;
  const KvSegment k{pair.source_head * slice, pair.target_head * slice, bytes};
  const KvSegment v{(prefill_heads() + pair.source_head) * slice, (decode_heads() + pair.target_head) * slice, bytes};
  // K's slice ends where V's starts on both sides only when both hold exactly these heads.
  if (k.source_offset + bytes == v.source_offset && k.target_offset + bytes == v.target_offset) {
    return {{k.source_offset, k.target_offset, 2 * bytes}};
  }
  return {k, v};
}

std::int64_t KvTransferPlan::total_bytes() const {
  std::int64_t total = 0;
  for (const KvTransferPair& pair : pairs) total += pair_bytes(pair);
  return total;
}

std::vector<KvTransferPair> KvTransferPlan::pairs_from(int prefill_rank) const {
  std::vector<KvTransferPair> out;
  std::copy_if(pairs.begin(), pairs.end(), std::back_inserter(out),
               [&](const KvTransferPair& p) { return p.prefill_rank == prefill_rank; });
  return out;
}

std::vector<KvTransferPair> KvTransferPlan::pairs_to(int decode_rank) const {
  std::vector<KvTransferPair> out;
  std::copy_if(pairs.begin(), pairs.end(), std::back_inserter(out),
               [&](const KvTransferPair& p) { return p.decode_rank == decode_rank; });
  return out;
}

KvTransferPlan make_kv_transfer_plan(const KvBlockLayout& layout, std::int64_t tokens, int prefill_tp, int decode_tp) {
  layout.validate(kOp);
  if (tokens < 1) throw InvalidArgument({.op = kOp}, fmt::format("a request needs at least 1 token, got {}", tokens));
  check_tp(layout, prefill_tp, "prefill");
  check_tp(layout, decode_tp, "decode");
  KvTransferPlan plan{.layout = layout, .tokens = tokens, .prefill_tp = prefill_tp, .decode_tp = decode_tp,
                      .blocks = layout.blocks_for(tokens), .pairs = {}};
  const int hp = plan.prefill_heads();
  const int hd = plan.decode_heads();
  for (int i = 0; i < prefill_tp; ++i) {
    for (int j = 0; j < decode_tp; ++j) {
      const int first = std::max(i * hp, j * hd);
      const int end = std::min((i + 1) * hp, (j + 1) * hd);
      if (first >= end) continue;
      plan.pairs.push_back({.prefill_rank = i, .decode_rank = j, .first_head = first, .heads = end - first,
                            .source_head = first - i * hp, .target_head = first - j * hd});
    }
  }
  return plan;
}

}  // namespace braid::serving
