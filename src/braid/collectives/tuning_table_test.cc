// Tuning tables as data: rule matching (inclusive ranges, table order) and the pure merge of
// per-size winners into byte ranges that `braid-bench --tune` writes.
#include "braid/collectives/tuning_table.h"

#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

TEST(TuningTableTest, RangesAreInclusiveAtBothEnds) {
  TuningRule rule{.op = OpKind::kAllreduce, .algorithm = "ring", .min_bytes = 64, .max_bytes = 128,
                  .min_world = 2, .max_world = 4, .min_hosts = 1, .max_hosts = 1};
  EXPECT_TRUE(rule.matches({OpKind::kAllreduce, 64, 2, 1}));
  EXPECT_TRUE(rule.matches({OpKind::kAllreduce, 128, 4, 1}));
  EXPECT_FALSE(rule.matches({OpKind::kAllreduce, 63, 2, 1}));
  EXPECT_FALSE(rule.matches({OpKind::kAllreduce, 129, 2, 1}));
  EXPECT_FALSE(rule.matches({OpKind::kAllreduce, 100, 1, 1}));
  EXPECT_FALSE(rule.matches({OpKind::kAllreduce, 100, 5, 1}));
  EXPECT_FALSE(rule.matches({OpKind::kAllreduce, 100, 4, 2}));
  EXPECT_FALSE(rule.matches({OpKind::kAllgather, 100, 4, 1}));
}

TEST(TuningTableTest, DefaultBoundsAreOpen) {
  TuningRule rule{.op = OpKind::kBroadcast, .algorithm = "chain"};
  EXPECT_TRUE(rule.matches({OpKind::kBroadcast, 0, 1, 1}));
  EXPECT_TRUE(rule.matches({OpKind::kBroadcast, kNoByteLimit, kNoRankLimit, kNoRankLimit}));
}

TEST(TuningTableTest, MatchingKeepsTableOrder) {
  TuningTable table{{{.op = OpKind::kAllreduce, .algorithm = "a", .min_bytes = 100},
                     {.op = OpKind::kAllreduce, .algorithm = "b", .max_bytes = 1000},
                     {.op = OpKind::kAllgather, .algorithm = "c"},
                     {.op = OpKind::kAllreduce, .algorithm = "d"}}};
  EXPECT_EQ(table.matching({OpKind::kAllreduce, 500, 2, 1}), (std::vector<std::string_view>{"a", "b", "d"}));
  EXPECT_EQ(table.matching({OpKind::kAllreduce, 50, 2, 1}), (std::vector<std::string_view>{"b", "d"}));
  EXPECT_EQ(table.matching({OpKind::kAllreduce, 5000, 2, 1}), (std::vector<std::string_view>{"a", "d"}));
  EXPECT_TRUE(table.matching({OpKind::kScatter, 5, 2, 1}).empty());
}

TEST(TuningTableTest, TunableOpsParseByTheirNames) {
  OpKind op = OpKind::kBarrier;
  for (OpKind tunable : tunable_ops()) {
    ASSERT_TRUE(parse_tunable_op(op_kind_name(tunable), op)) << op_kind_name(tunable);
    EXPECT_EQ(op, tunable);
  }
  EXPECT_EQ(tunable_ops().size(), 9u);
  EXPECT_TRUE(parse_tunable_op("alltoallv", op));
  EXPECT_EQ(op, OpKind::kAlltoallv);
  EXPECT_FALSE(tuned_by_bytes(OpKind::kAlltoallv));
  EXPECT_TRUE(tuned_by_bytes(OpKind::kAlltoall));
  EXPECT_FALSE(parse_tunable_op("barrier", op));
  EXPECT_FALSE(parse_tunable_op("Allreduce", op));
}

TEST(GeometricBoundaryTest, LiesAtTheGeometricMidpointWithinTheInterval) {
  EXPECT_EQ(geometric_boundary(1024, 4096), 2048u);
  EXPECT_EQ(geometric_boundary(8, 32), 16u);
  EXPECT_EQ(geometric_boundary(3, 4), 4u);      // ceil(sqrt(12)) = 4, the upper size itself
  EXPECT_EQ(geometric_boundary(0, 8), 1u);      // sqrt(0) = 0, but 0 stays in the lower range
  EXPECT_EQ(geometric_boundary(10, 11), 11u);
  EXPECT_EQ(geometric_boundary(1ull << 30, 1ull << 32), 1ull << 31);
  EXPECT_THROW(geometric_boundary(8, 8), InvalidArgument);
  EXPECT_THROW(geometric_boundary(9, 8), InvalidArgument);
}

std::vector<SizeWinner> winners(std::initializer_list<std::pair<std::uint64_t, const char*>> list) {
  std::vector<SizeWinner> out;
  for (const auto& [bytes, name] : list) out.push_back({bytes, name});
  return out;
}

TEST(RulesFromWinnersTest, OneWinnerGivesOneOpenRuleOnThisWorld) {
  auto w = winners({{8, "ring"}, {64, "ring"}, {512, "ring"}});
  std::vector<TuningRule> rules = rules_from_winners(OpKind::kAllreduce, w, 4, 1);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0], (TuningRule{.op = OpKind::kAllreduce, .algorithm = "ring", .min_bytes = 0,
                                  .max_bytes = kNoByteLimit, .min_world = 4, .max_world = 4, .min_hosts = 1,
                                  .max_hosts = 1}));
}

TEST(RulesFromWinnersTest, ConsecutiveWinnersMergeAndBoundariesAreGeometric) {
  auto w = winners({{1024, "rd"}, {4096, "rd"}, {16384, "ring"}, {65536, "ring"}, {262144, "rd"}, {1048576, "chain"}});
  std::vector<TuningRule> rules = rules_from_winners(OpKind::kAllgather, w, 3, 2);
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0].algorithm, "rd");
  EXPECT_EQ(rules[0].min_bytes, 0u);
  EXPECT_EQ(rules[0].max_bytes, 8191u);
  EXPECT_EQ(rules[1].algorithm, "ring");
  EXPECT_EQ(rules[1].min_bytes, 8192u);
  EXPECT_EQ(rules[1].max_bytes, 131071u);
  EXPECT_EQ(rules[2].algorithm, "rd");
  EXPECT_EQ(rules[2].min_bytes, 131072u);
  EXPECT_EQ(rules[2].max_bytes, 524287u);
  EXPECT_EQ(rules[3].algorithm, "chain");
  EXPECT_EQ(rules[3].min_bytes, 524288u);
  EXPECT_EQ(rules[3].max_bytes, kNoByteLimit);
  for (const TuningRule& rule : rules) {
    EXPECT_EQ(rule.op, OpKind::kAllgather);
    EXPECT_EQ(rule.min_world, 3);
    EXPECT_EQ(rule.max_world, 3);
    EXPECT_EQ(rule.min_hosts, 2);
    EXPECT_EQ(rule.max_hosts, 2);
  }
  // Every measured size is covered by the rule of its own winner.
  TuningTable table{rules};
  for (const SizeWinner& winner : w) {
    ASSERT_EQ(table.matching({OpKind::kAllgather, winner.bytes, 3, 2}).size(), 1u);
    EXPECT_EQ(table.matching({OpKind::kAllgather, winner.bytes, 3, 2})[0], winner.algorithm);
  }
}

TEST(RulesFromWinnersTest, SizesWithoutAWinnerAreSkipped) {
  auto w = winners({{8, "tree"}, {32, ""}, {128, "ring"}});
  std::vector<TuningRule> rules = rules_from_winners(OpKind::kAllreduce, w, 2, 1);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 31u);  // boundary between 8 and 128
  EXPECT_EQ(rules[1].min_bytes, 32u);
  EXPECT_TRUE(rules_from_winners(OpKind::kAllreduce, winners({{8, ""}}), 2, 1).empty());
  EXPECT_TRUE(rules_from_winners(OpKind::kAllreduce, {}, 2, 1).empty());
}

// alltoallv is matched without bytes (tuning_table.h): one rule, the most frequent winner, a tie
// going to the winner of the largest size.
TEST(RulesFromWinnersTest, AlltoallvGetsOneRuleForEverySize) {
  auto w = winners({{1 << 20, "pairwise"}, {4 << 20, "shm_direct"}, {16 << 20, "shm_direct"}, {64 << 20, "pairwise"},
                    {128 << 20, ""}});
  std::vector<TuningRule> rules = rules_from_winners(OpKind::kAlltoallv, w, 4, 1);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0], (TuningRule{.op = OpKind::kAlltoallv, .algorithm = "pairwise", .min_bytes = 0,
                                  .max_bytes = kNoByteLimit, .min_world = 4, .max_world = 4, .min_hosts = 1,
                                  .max_hosts = 1}));
  w.push_back({256 << 20, "shm_direct"});
  EXPECT_EQ(rules_from_winners(OpKind::kAlltoallv, w, 4, 1)[0].algorithm, "shm_direct");  // 3 wins to 2
  EXPECT_TRUE(rules_from_winners(OpKind::kAlltoallv, winners({{8, ""}}), 4, 1).empty());
  EXPECT_THROW(rules_from_winners(OpKind::kAlltoallv, winners({{64, "a"}, {8, "b"}}), 2, 1), InvalidArgument);
}

TEST(RulesFromWinnersTest, SizesMustAscend) {
  EXPECT_THROW(rules_from_winners(OpKind::kAllreduce, winners({{64, "ring"}, {8, "tree"}}), 2, 1), InvalidArgument);
  EXPECT_THROW(rules_from_winners(OpKind::kAllreduce, winners({{64, "ring"}, {64, "ring"}}), 2, 1), InvalidArgument);
}

}  // namespace
}  // namespace braid
