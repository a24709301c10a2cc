// The transfer plan against a brute-force reference that follows every head slice (K and V of
// every global head) from the prefill rank holding it to the decode rank needing it, for the
// reshards 1->1, 2->1, 1->2, 4->2, 2->4, 2->2, 4->4 and the odd 3->1 / 1->3 / 3->3; and its bytes
// against KvBlockLayout::sequence_bytes.
#include "braid/serving/kv_transfer_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "braid/base/error.h"

namespace braid::serving {
namespace {

// (prefill rank, decode rank) -> {(source offset, target offset)} of head slices in one block.
using SliceMap = std::map<std::pair<int, int>, std::set<std::pair<std::int64_t, std::int64_t>>>;

SliceMap brute_force(const KvBlockLayout& kv, int p, int d) {
  const int hp = kv.kv_heads / p;
  const int hd = kv.kv_heads / d;
  const std::int64_t slice = kv.head_slice_bytes();
  SliceMap out;
  for (int kv_half = 0; kv_half < 2; ++kv_half) {
    for (int h = 0; h < kv.kv_heads; ++h) {
      const int i = h / hp;
      const int j = h / hd;
      out[{i, j}].insert({(kv_half * hp + h - i * hp) * slice, (kv_half * hd + h - j * hd) * slice});
    }
  }
  return out;
}

SliceMap from_plan(const KvTransferPlan& plan) {
  const std::int64_t slice = plan.layout.head_slice_bytes();
  SliceMap out;
  for (const KvTransferPair& pair : plan.pairs) {
    std::int64_t bytes = 0;
    for (const KvSegment& s : plan.segments(pair)) {
      EXPECT_EQ(s.bytes % slice, 0);
      for (std::int64_t o = 0; o < s.bytes; o += slice) {
        const bool fresh = out[{pair.prefill_rank, pair.decode_rank}].insert({s.source_offset + o, s.target_offset + o}).second;
        EXPECT_TRUE(fresh) << "a head slice moved twice";
      }
      bytes += s.bytes;
    }
    EXPECT_EQ(bytes, plan.pair_block_bytes(pair));
  }
  return out;
}

class KvTransferPlanTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(KvTransferPlanTest, MovesEveryHeadSliceOnceToTheRankThatNeedsIt) {
  const auto [p, d] = GetParam();
  const KvBlockLayout kv{.layers = 3, .kv_heads = 12, .head_dim = 8, .block_tokens = 4, .element_bytes = 2};
  for (const std::int64_t tokens : {1, 4, 5, 13}) {
    const KvTransferPlan plan = make_kv_transfer_plan(kv, tokens, p, d);
    EXPECT_EQ(plan.blocks, kv.blocks_for(tokens));
    EXPECT_EQ(from_plan(plan), brute_force(kv, p, d));
    EXPECT_EQ(plan.total_bytes(), kv.sequence_bytes(tokens, kv.kv_heads));
    std::int64_t from = 0, to = 0;
    for (int i = 0; i < p; ++i) {
      for (const auto& pair : plan.pairs_from(i)) from += plan.pair_bytes(pair);
    }
    for (int j = 0; j < d; ++j) {
      for (const auto& pair : plan.pairs_to(j)) to += plan.pair_bytes(pair);
    }
    EXPECT_EQ(from, plan.total_bytes());
    EXPECT_EQ(to, plan.total_bytes());
  }
}

INSTANTIATE_TEST_SUITE_P(Reshards, KvTransferPlanTest,
                         ::testing::Values(std::tuple{1, 1}, std::tuple{2, 1}, std::tuple{1, 2}, std::tuple{4, 2},
                                           std::tuple{2, 4}, std::tuple{2, 2}, std::tuple{4, 4}, std::tuple{3, 1},
                                           std::tuple{1, 3}, std::tuple{3, 3}, std::tuple{4, 3}));

TEST(KvTransferPlan, SameTpMovesWholeBlocksOneSegmentEach) {
  const KvBlockLayout kv{.layers = 2, .kv_heads = 4, .head_dim = 16, .block_tokens = 8, .element_bytes = 4};
  const KvTransferPlan plan = make_kv_transfer_plan(kv, 20, 2, 2);
  ASSERT_EQ(plan.pairs.size(), 2u);
  for (const auto& pair : plan.pairs) {
    EXPECT_EQ(pair.prefill_rank, pair.decode_rank);
    const auto segments = plan.segments(pair);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_EQ(segments[0].bytes, kv.block_bytes(2));
  }
}

TEST(KvTransferPlan, TwoToOneSplitsEachDecodeBlockIntoKAndVHalves) {
  const KvBlockLayout kv{.layers = 1, .kv_heads = 4, .head_dim = 2, .block_tokens = 1, .element_bytes = 1};
  const KvTransferPlan plan = make_kv_transfer_plan(kv, 1, 2, 1);
  ASSERT_EQ(plan.pairs.size(), 2u);
  const auto second = plan.segments(plan.pairs[1]);  // prefill rank 1: heads 2, 3
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].source_offset, 0);  // its K slices
  EXPECT_EQ(second[0].target_offset, 4);  // after heads 0, 1 of the decode block's K
  EXPECT_EQ(second[1].source_offset, 4);  // its V slices
  EXPECT_EQ(second[1].target_offset, 12); // K (8 B) + heads 0, 1 of V
}

TEST(KvTransferPlan, RefusesWhatCannotBePlanned) {
  const KvBlockLayout kv{.layers = 2, .kv_heads = 4, .head_dim = 16, .block_tokens = 8, .element_bytes = 4};
  EXPECT_THROW(make_kv_transfer_plan(kv, 0, 1, 1), InvalidArgument);
  EXPECT_THROW(make_kv_transfer_plan(kv, 8, 3, 1), InvalidArgument);
  EXPECT_THROW(make_kv_transfer_plan(kv, 8, 1, 0), InvalidArgument);
  KvBlockLayout bad = kv;
  bad.head_dim = 0;
  EXPECT_THROW(make_kv_transfer_plan(bad, 8, 1, 1), InvalidArgument);
  try {
    make_kv_transfer_plan(kv, 8, 1, 8);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("decode TP size 8 must be at least 1 and divide the 4 KV heads"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace braid::serving
