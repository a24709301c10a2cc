// braid-plan kv's paged and transfer figures (plan/kv_cache.h, arithmetic over base only) equal
// the bytes the transfer plan moves (serving/kv_transfer_plan.h), for several models, prompt
// lengths, block sizes and prefill/decode TP sizes: predicted and transferred bytes are one number.
#include <gtest/gtest.h>

#include <algorithm>

#include "braid/plan/kv_cache.h"
#include "braid/serving/kv_transfer_plan.h"

namespace braid::serving {
namespace {

double figure(const plan::Estimates& estimates, const std::string& name) {
  const auto it = std::find_if(estimates.begin(), estimates.end(), [&](const auto& e) { return e.name == name; });
  EXPECT_NE(it, estimates.end()) << name;
  return it == estimates.end() ? -1 : it->value;
}

struct Shape {
  int layers, kv_heads, head_dim, block, bytes;
  std::int64_t tokens;
  int p, d;
};

TEST(KvPlanAgreement, PlannerBytesEqualTheTransferPlansBytes) {
  const Shape shapes[] = {{80, 8, 128, 16, 2, 2048, 2, 1},  // LLaMA-70B, the seeds' example
                          {80, 8, 128, 16, 2, 2049, 1, 2},  {32, 8, 128, 32, 2, 1000, 4, 2},
                          {6, 4, 32, 16, 4, 100, 1, 1},     {12, 12, 64, 16, 4, 513, 2, 2},
                          {12, 12, 64, 8, 1, 7, 3, 4},      {24, 16, 64, 256, 2, 100000, 8, 2}};
  for (const Shape& s : shapes) {
    const KvBlockLayout kv{.layers = s.layers, .kv_heads = s.kv_heads, .head_dim = s.head_dim, .block_tokens = s.block,
                           .element_bytes = s.bytes};
    const KvTransferPlan transfer = make_kv_transfer_plan(kv, s.tokens, s.p, s.d);
    const plan::KvInput in{.layers = s.layers, .kv_heads = s.kv_heads, .head_dim = s.head_dim,
                           .bytes = static_cast<double>(s.bytes), .tokens = static_cast<double>(s.tokens),
                           .block_size = s.block, .prefill_tp = s.p, .decode_tp = s.d};
    const plan::Estimates out = plan::kv_cache(in);
    SCOPED_TRACE(kv.describe() + ", " + std::to_string(s.tokens) + " tokens, " + std::to_string(s.p) + " -> " +
                 std::to_string(s.d));
    EXPECT_EQ(figure(out, "kv_paged_bytes"), static_cast<double>(transfer.total_bytes()));
    EXPECT_EQ(figure(out, "kv_transfer_bytes_per_request"), static_cast<double>(transfer.total_bytes()));
    EXPECT_EQ(figure(out, "kv_transfer_pairs"), static_cast<double>(transfer.pairs.size()));
    std::int64_t from_first = 0, to_first = 0;
    for (const auto& pair : transfer.pairs_from(0)) from_first += transfer.pair_bytes(pair);
    for (const auto& pair : transfer.pairs_to(0)) to_first += transfer.pair_bytes(pair);
    EXPECT_EQ(figure(out, "kv_transfer_bytes_per_prefill_rank"), static_cast<double>(from_first));
    EXPECT_EQ(figure(out, "kv_transfer_bytes_per_decode_rank"), static_cast<double>(to_first));
    // Whole blocks: at least the unpaged figure, less than one block per layer more.
    const double unpaged = figure(out, "kv_bytes_total");
    EXPECT_GE(figure(out, "kv_paged_bytes"), unpaged);
    EXPECT_LT(figure(out, "kv_paged_bytes") - unpaged, static_cast<double>(s.layers * kv.block_bytes(s.kv_heads)));
  }
}

}  // namespace
}  // namespace braid::serving
