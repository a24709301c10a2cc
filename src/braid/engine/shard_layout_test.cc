#include "braid/engine/shard_layout.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"

namespace braid::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Shards = std::vector<std::vector<std::vector<std::int64_t>>>;  // [buffer][rank][element]
constexpr std::int64_t kPadding = -1;  // what an element outside every parameter holds

std::vector<ShardParamInfo> f32_params(const std::vector<std::int64_t>& counts) {
  std::vector<ShardParamInfo> params;
  for (std::size_t i = 0; i < counts.size(); ++i) params.push_back({.name = fmt::format("p{}", i), .count = counts[i]});
  return params;
}

// A random model: up to 12 params of 0..300 elements (a quarter of them empty), element sizes
// 1, 2, 4 or 8, and up to three groups when `grouped`.
std::vector<ShardParamInfo> random_params(SplitMix64& rng, bool grouped) {
  std::vector<ShardParamInfo> params(uniform_below(rng, 13));
  constexpr std::size_t kSizes[] = {1, 2, 4, 8};
  for (std::size_t i = 0; i < params.size(); ++i) {
    params[i] = {.name = fmt::format("p{}", i),
                 .count = uniform_below(rng, 4) == 0 ? 0 : static_cast<std::int64_t>(uniform_below(rng, 301)),
                 .element_bytes = kSizes[uniform_below(rng, 4)],
                 .group = grouped ? static_cast<int>(uniform_below(rng, 3)) : 0};
  }
  return params;
}

// Element value = its index in the full model (the parameters' elements concatenated in model order).
std::vector<std::int64_t> model_start(std::span<const ShardParamInfo> params) {
  std::vector<std::int64_t> start(params.size() + 1, 0);
  for (std::size_t i = 0; i < params.size(); ++i) start[i + 1] = start[i] + params[i].count;
  return start;
}

// The shards a rank holds, built from the buffer offsets alone (not from the pieces), so that
// the pieces are checked against an independent reading of the layout.
// Element values follow `value_order` (default: the layout's own params), matched by name, so
// that two layouts listing the same params in other orders hold the same value per element.
Shards shards_of(const ShardLayout& layout, std::span<const ShardParamInfo> value_order = {}) {
  if (value_order.empty()) value_order = layout.params;
  const std::vector<std::int64_t> by_order = model_start(value_order);
  std::map<std::string, std::int64_t> start_of;
  for (std::size_t i = 0; i < value_order.size(); ++i) start_of[value_order[i].name] = by_order[i];
  std::vector<std::int64_t> start;
  for (const ShardParamInfo& p : layout.params) start.push_back(start_of.at(p.name));
  Shards shards;
  for (const FlatBuffer& b : layout.buffers) {
    std::vector<std::int64_t> flat(static_cast<std::size_t>(b.elements), kPadding);
    for (std::size_t slot = 0; slot < b.params.size(); ++slot) {
      const auto p = static_cast<std::size_t>(b.params[slot]);
      for (std::int64_t i = 0; i < layout.params[p].count; ++i) {
        flat[static_cast<std::size_t>(b.offsets[slot] + i)] = start[p] + i;
      }
    }
    auto& ranks = shards.emplace_back();
    for (int r = 0; r < layout.world_size(); ++r) {
      auto first = flat.begin() + r * b.shard_elements;
      ranks.emplace_back(first, first + b.shard_elements);
    }
  }
  return shards;
}

// Every property the file comment of shard_layout.h promises, for one layout.
void expect_valid_layout(std::span<const ShardParamInfo> params, const ShardLayoutOptions& o, const ShardLayout& layout) {
  SCOPED_TRACE(describe(layout));
  ASSERT_EQ(layout.options, o);
  ASSERT_EQ(layout.buffer_of.size(), params.size());
  ASSERT_EQ(layout.pieces_of.size(), params.size());
  const std::int64_t n = o.world_size;
  std::vector<int> listed(params.size(), 0);
  for (std::size_t bi = 0; bi < layout.buffers.size(); ++bi) {
    const FlatBuffer& b = layout.buffers[bi];
    ASSERT_FALSE(b.params.empty());
    ASSERT_EQ(b.offsets.size(), b.params.size());
    const auto align = static_cast<std::int64_t>(o.alignment_bytes / b.element_bytes);
    const std::int64_t quantum = std::lcm(align, o.shard_elements_multiple);
    std::int64_t end = 0;
    std::int64_t counted = 0;
    int nonempty = 0;
    for (std::size_t slot = 0; slot < b.params.size(); ++slot) {
      const auto p = static_cast<std::size_t>(b.params[slot]);
      if (slot > 0) {
        EXPECT_LT(b.params[slot - 1], b.params[slot]) << "model order";
      }
      EXPECT_EQ(params[p].group, b.group);
      EXPECT_EQ(params[p].element_bytes, b.element_bytes);
      EXPECT_EQ(layout.buffer_of[p], static_cast<int>(bi));
      EXPECT_EQ(layout.offset_of[p], b.offsets[slot]);
      EXPECT_EQ(b.offsets[slot] % align, 0) << "param " << p << " is not aligned";
      EXPECT_GE(b.offsets[slot], end) << "param " << p << " overlaps the one before";
      if (params[p].count > 0) {
        EXPECT_LT(b.offsets[slot] - end, nonempty == 0 ? 1 : align) << "more padding than alignment needs";
        end = b.offsets[slot] + params[p].count;
        ++nonempty;
      }
      counted += params[p].count;
      ++listed[p];
    }
    EXPECT_EQ(b.used_elements, end);
    EXPECT_EQ(b.elements, n * b.shard_elements) << "equal shards cover the buffer";
    EXPECT_EQ(b.shard_elements % quantum, 0) << "shards are aligned and a multiple of shard_elements_multiple";
    EXPECT_GE(b.elements, b.used_elements);
    EXPECT_LE(b.tail_padding_elements, n * quantum - 1) << "the guaranteed tail bound";
    EXPECT_EQ(b.tail_padding_elements, b.elements - b.used_elements);
    EXPECT_EQ(b.padding_elements, b.elements - counted);
    ASSERT_EQ(b.shard_pieces.size(), static_cast<std::size_t>(n));
    std::vector<ShardPiece> from_shards;
    for (std::size_t r = 0; r < b.shard_pieces.size(); ++r) {
      for (std::size_t k = 0; k < b.shard_pieces[r].size(); ++k) {
        EXPECT_EQ(b.shard_pieces[r][k].rank, static_cast<int>(r));
        if (k > 0) {
          const ShardPiece& prev = b.shard_pieces[r][k - 1];
          EXPECT_LE(prev.shard_offset + prev.length, b.shard_pieces[r][k].shard_offset) << "rank " << r << " overlaps";
        }
        from_shards.push_back(b.shard_pieces[r][k]);
      }
    }
    std::vector<ShardPiece> from_params;
    for (int p : b.params) {
      const auto& pieces = layout.pieces_of[static_cast<std::size_t>(p)];
      from_params.insert(from_params.end(), pieces.begin(), pieces.end());
    }
    auto by_position = [&](const ShardPiece& x, const ShardPiece& y) {
      return x.rank * b.shard_elements + x.shard_offset < y.rank * b.shard_elements + y.shard_offset;
    };
    std::sort(from_shards.begin(), from_shards.end(), by_position);
    std::sort(from_params.begin(), from_params.end(), by_position);
    EXPECT_EQ(from_shards, from_params) << "a rank's pieces are the parameters' pieces it holds";
  }
  for (std::size_t p = 0; p < params.size(); ++p) {
    EXPECT_EQ(listed[p], 1) << "param " << p << " in exactly one buffer";
    std::int64_t covered = 0;  // the pieces partition [0, count) in order
    const FlatBuffer& b = layout.buffers[static_cast<std::size_t>(layout.buffer_of[p])];
    for (const ShardPiece& piece : layout.pieces_of[p]) {
      EXPECT_EQ(piece.param, static_cast<int>(p));
      EXPECT_GT(piece.length, 0);
      EXPECT_EQ(piece.param_offset, covered);
      EXPECT_GE(piece.rank, 0);
      EXPECT_LT(piece.rank, n);
      EXPECT_LE(piece.shard_offset + piece.length, b.shard_elements) << "a piece stays inside its shard";
      EXPECT_EQ(piece.rank * b.shard_elements + piece.shard_offset, layout.offset_of[p] + piece.param_offset);
      covered += piece.length;
    }
    EXPECT_EQ(covered, params[p].count) << "param " << p;
  }
}

// Assembles every parameter from `shards` with its pieces (the state_dict gather).
std::vector<std::int64_t> gather_full_model(const ShardLayout& layout, const Shards& shards) {
  std::vector<std::int64_t> model;
  for (std::size_t p = 0; p < layout.params.size(); ++p) {
    std::vector<std::int64_t> full(static_cast<std::size_t>(layout.params[p].count), kPadding);
    const auto& buffer = shards[static_cast<std::size_t>(layout.buffer_of[p])];
    for (const ShardPiece& piece : layout.pieces_of[p]) {
      const auto& shard = buffer[static_cast<std::size_t>(piece.rank)];
      std::copy_n(shard.begin() + piece.shard_offset, piece.length, full.begin() + piece.param_offset);
    }
    model.insert(model.end(), full.begin(), full.end());
  }
  return model;
}

// Runs `plan` on `source` shards into fresh target shards of `to`, counting writes per element.
Shards apply_reshard(const ReshardPlan& plan, const ShardLayout& to, const Shards& source) {
  Shards target;
  std::vector<std::vector<std::vector<int>>> writes;
  EXPECT_EQ(plan.copies.size(), to.buffers.size());
  for (std::size_t b = 0; b < to.buffers.size(); ++b) {
    const auto shard = static_cast<std::size_t>(to.buffers[b].shard_elements);
    target.emplace_back(static_cast<std::size_t>(to.world_size()), std::vector<std::int64_t>(shard, kPadding));
    writes.emplace_back(static_cast<std::size_t>(to.world_size()), std::vector<int>(shard, 0));
    EXPECT_EQ(plan.copies[b].size(), static_cast<std::size_t>(to.world_size()));
    for (std::size_t r = 0; r < plan.copies[b].size(); ++r) {
      const auto& run = plan.copies[b][r];
      for (std::size_t k = 0; k < run.size(); ++k) {
        const ShardCopy& c = run[k];
        EXPECT_GT(c.length, 0);
        if (k > 0) {
          const ShardCopy& prev = run[k - 1];
          EXPECT_LE(prev.target_offset + prev.length, c.target_offset) << "sorted by target offset";
          EXPECT_FALSE(prev.source_buffer == c.source_buffer && prev.source_rank == c.source_rank &&
                       prev.source_offset + prev.length == c.source_offset &&
                       prev.target_offset + prev.length == c.target_offset)
              << "not coalesced";
        }
        const auto& from = source.at(static_cast<std::size_t>(c.source_buffer)).at(static_cast<std::size_t>(c.source_rank));
        for (std::int64_t i = 0; i < c.length; ++i) {
          target[b][r].at(static_cast<std::size_t>(c.target_offset + i)) = from.at(static_cast<std::size_t>(c.source_offset + i));
          ++writes[b][r][static_cast<std::size_t>(c.target_offset + i)];
        }
      }
    }
  }
  for (const auto& buffer : writes) {
    for (const auto& rank : buffer) {
      for (int w : rank) EXPECT_LE(w, 1) << "an element is written twice";
    }
  }
  return target;
}

TEST(ShardLayoutTest, ThreeFloatParamsOverFourRanksByHand) {
  auto params = f32_params({10, 0, 7});
  ShardLayoutOptions o{.world_size = 4, .alignment_bytes = 16};  // 4 floats
  ShardLayout layout = plan_shard_layout(params, o);
  expect_valid_layout(params, o, layout);
  ASSERT_EQ(layout.buffers.size(), 1u);
  const FlatBuffer& b = layout.buffers[0];
  // p0 at [0, 10), the cursor rounds up to 12; p1 (empty) and p2 at 12; p2 ends at 19.
  EXPECT_THAT(b.offsets, ElementsAre(0, 12, 12));
  EXPECT_EQ(b.used_elements, 19);
  EXPECT_EQ(b.shard_elements, 8);  // ceil(19 / 4) = 5, rounded up to the alignment: 8
  EXPECT_EQ(b.elements, 32);
  EXPECT_EQ(b.padding_elements, 15);  // 2 between p0 and p2, 13 at the tail
  EXPECT_EQ(b.tail_padding_elements, 13);
  EXPECT_THAT(layout.pieces_of[0], ElementsAre(ShardPiece{.param = 0, .rank = 0, .param_offset = 0, .shard_offset = 0, .length = 8},
                                               ShardPiece{.param = 0, .rank = 1, .param_offset = 8, .shard_offset = 0, .length = 2}));
  EXPECT_TRUE(layout.pieces_of[1].empty());
  EXPECT_THAT(layout.pieces_of[2], ElementsAre(ShardPiece{.param = 2, .rank = 1, .param_offset = 0, .shard_offset = 4, .length = 4},
                                               ShardPiece{.param = 2, .rank = 2, .param_offset = 4, .shard_offset = 0, .length = 3}));
  EXPECT_EQ(b.shard_pieces[0], (std::vector<ShardPiece>{layout.pieces_of[0][0]}));
  EXPECT_EQ(b.shard_pieces[1], (std::vector<ShardPiece>{layout.pieces_of[0][1], layout.pieces_of[2][0]}));
  EXPECT_EQ(b.shard_pieces[2], (std::vector<ShardPiece>{layout.pieces_of[2][1]}));
  EXPECT_TRUE(b.shard_pieces[3].empty()) << "rank 3 holds only padding";
}

TEST(ShardLayoutTest, GroupsAndElementSizesGetBuffersOfTheirOwn) {
  std::vector<ShardParamInfo> params{{.name = "a.w", .count = 5, .group = 0},
                                     {.name = "a.h", .count = 3, .element_bytes = 2, .group = 0},
                                     {.name = "b.w", .count = 6, .group = 1},
                                     {.name = "a.b", .count = 1, .group = 0}};
  ShardLayoutOptions o{.world_size = 2, .alignment_bytes = 8};
  ShardLayout layout = plan_shard_layout(params, o);
  expect_valid_layout(params, o, layout);
  ASSERT_EQ(layout.buffers.size(), 3u);  // numbered by their first param
  EXPECT_THAT(layout.buffers[0].params, ElementsAre(0, 3));
  EXPECT_THAT(layout.buffers[0].offsets, ElementsAre(0, 6));  // 5 floats round up to 6
  EXPECT_EQ(layout.buffers[0].shard_elements, 4);             // ceil(7 / 2) = 4, a multiple of 2 floats
  EXPECT_THAT(layout.buffers[1].params, ElementsAre(1));
  EXPECT_EQ(layout.buffers[1].element_bytes, 2u);
  EXPECT_EQ(layout.buffers[1].shard_elements, 4);  // ceil(3 / 2) = 2, rounded up to 4 halves
  EXPECT_THAT(layout.buffers[2].params, ElementsAre(2));
  EXPECT_EQ(layout.buffers[2].group, 1);
  EXPECT_THAT(layout.buffer_of, ElementsAre(0, 1, 2, 0));
}

TEST(ShardLayoutTest, ShardElementsMultipleRoundsEveryShard) {
  auto params = f32_params({100});
  ShardLayoutOptions o{.world_size = 3, .alignment_bytes = 16, .shard_elements_multiple = 6};
  ShardLayout layout = plan_shard_layout(params, o);
  expect_valid_layout(params, o, layout);
  EXPECT_EQ(layout.buffers[0].shard_elements, 36);  // ceil(100 / 3) = 34, up to lcm(4, 6) = 12
}

TEST(ShardLayoutTest, EmptyModelsAndEmptyParamsHoldNoPieces) {
  ShardLayout none = plan_shard_layout({}, {.world_size = 3});
  EXPECT_TRUE(none.buffers.empty());
  auto params = f32_params({0, 0});
  ShardLayout empty = plan_shard_layout(params, {.world_size = 3});
  ASSERT_EQ(empty.buffers.size(), 1u);
  EXPECT_EQ(empty.buffers[0].elements, 0);
  EXPECT_TRUE(empty.pieces_of[0].empty());
  EXPECT_TRUE(empty.pieces_of[1].empty());
  EXPECT_EQ(plan_reshard(empty, plan_shard_layout(params, {.world_size = 5})).copied_elements(), 0);
}

TEST(ShardLayoutTest, OffsetsDoNotDependOnTheWorldSize) {
  SplitMix64 rng(19);
  auto params = random_params(rng, true);
  ShardLayout one = plan_shard_layout(params, {.world_size = 1});
  for (int n = 2; n <= 16; ++n) EXPECT_EQ(plan_shard_layout(params, {.world_size = n}).offset_of, one.offset_of) << n;
}

TEST(ShardLayoutTest, RandomModelsSatisfyEveryPropertyAtEveryWorldSize) {
  SplitMix64 rng(1);
  for (int model = 0; model < 12; ++model) {
    auto params = random_params(rng, model % 2 == 1);
    for (std::size_t alignment : {8, 16, 64}) {
      for (int n = 1; n <= 16; ++n) {
        ShardLayoutOptions o{.world_size = n, .alignment_bytes = alignment,
                             .shard_elements_multiple = model % 3 == 2 ? n : 1};
        SCOPED_TRACE(fmt::format("model {}, world {}, alignment {}", model, n, alignment));
        ShardLayout layout = plan_shard_layout(params, o);
        expect_valid_layout(params, o, layout);
        if (::testing::Test::HasFailure()) return;
        std::vector<std::int64_t> expected(static_cast<std::size_t>(model_start(params).back()));
        std::iota(expected.begin(), expected.end(), 0);
        EXPECT_EQ(gather_full_model(layout, shards_of(layout)), expected) << "gather reproduces every parameter";
      }
    }
  }
}

TEST(ShardLayoutTest, ReshardingMovesEveryElementOnceForAllWorldSizes) {
  SplitMix64 rng(2);
  for (int model = 0; model < 6; ++model) {
    auto params = random_params(rng, model % 2 == 1);
    for (int n = 1; n <= 8; ++n) {
      for (int m = 1; m <= 8; ++m) {
        SCOPED_TRACE(fmt::format("model {}, {} -> {} ranks", model, n, m));
        ShardLayout from = plan_shard_layout(params, {.world_size = n});
        ShardLayout to = plan_shard_layout(params, {.world_size = m});
        ReshardPlan plan = plan_reshard(from, to);
        EXPECT_EQ(plan.copied_elements(), model_start(params).back());
        EXPECT_EQ(apply_reshard(plan, to, shards_of(from)), shards_of(to)) << describe(plan);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(ShardLayoutTest, ReshardingAcrossAlignmentsAndGroupings) {
  SplitMix64 rng(3);
  auto flat = random_params(rng, false);
  auto grouped = flat;
  for (std::size_t i = 0; i < grouped.size(); ++i) grouped[i].group = static_cast<int>(i % 3);  // a "module" each
  ShardLayout from = plan_shard_layout(flat, {.world_size = 4, .alignment_bytes = 64});
  ShardLayout to = plan_shard_layout(grouped, {.world_size = 3, .alignment_bytes = 8, .shard_elements_multiple = 5});
  EXPECT_EQ(apply_reshard(plan_reshard(from, to), to, shards_of(from)), shards_of(to));
  EXPECT_EQ(apply_reshard(plan_reshard(to, from), from, shards_of(to)), shards_of(from));
}

// What `plan` says when resharding `from` into `other` laid out at 3 ranks ("accepted" if nothing).
std::string reshard_rejection(ReshardPlan (*plan)(const ShardLayout&, const ShardLayout&), const ShardLayout& from,
                              const std::vector<ShardParamInfo>& other) {
  try {
    plan(from, plan_shard_layout(other, {.world_size = 3}));
  } catch (const InvalidArgument& e) {
    return std::string(e.what());
  }
  return std::string("accepted");
}

// ZeRO-1/2 lay a model out in bucket order (reverse registration), stage 3 in module order with
// a group per module: matched by name, every element still lands where the target says, both
// ways, at every pair of world sizes; and by position the same pair is refused.
TEST(ShardLayoutTest, ReshardingByNameAcrossParameterOrders) {
  SplitMix64 rng(7);
  for (int model = 0; model < 4; ++model) {
    auto modules = random_params(rng, true);
    std::vector<ShardParamInfo> buckets(modules.rbegin(), modules.rend());
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i].group = static_cast<int>(i / 3);
    for (int n = 1; n <= 5; ++n) {
      for (int m = 1; m <= 5; ++m) {
        SCOPED_TRACE(fmt::format("model {}, {} -> {} ranks", model, n, m));
        ShardLayout from = plan_shard_layout(buckets, {.world_size = n, .alignment_bytes = 8});
        ShardLayout to = plan_shard_layout(modules, {.world_size = m, .alignment_bytes = 64});
        EXPECT_EQ(apply_reshard(plan_reshard_by_name(from, to), to, shards_of(from, modules)), shards_of(to));
        EXPECT_EQ(apply_reshard(plan_reshard_by_name(to, from), from, shards_of(to)), shards_of(from, modules));
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  auto params = f32_params({4, 5, 6});
  std::vector<ShardParamInfo> reversed(params.rbegin(), params.rend());
  EXPECT_THROW(plan_reshard(plan_shard_layout(params, {}), plan_shard_layout(reversed, {})), InvalidArgument);
}

TEST(ShardLayoutTest, ReshardingByNameRejectsDifferentModelsNamingTheParam) {
  auto params = f32_params({4, 5, 6});
  ShardLayout base = plan_shard_layout(params, {.world_size = 2});
  auto message = [&](std::vector<ShardParamInfo> other) { return reshard_rejection(plan_reshard_by_name, base, other); };
  EXPECT_THAT(message(f32_params({4, 5})), HasSubstr("the source layout has 3 params, the target 2"));
  EXPECT_THAT(message(f32_params({4, 5, 6, 7})), HasSubstr("param 'p3' of the target is not in the source"));
  auto resized = params;
  resized[1].count = 9;
  EXPECT_THAT(message(resized), HasSubstr("param 'p1' has 5 elements of 4 bytes in the source, 9 of 4 in the target"));
  auto twice = params;
  twice[2].name = "p0";
  EXPECT_THAT(message(twice), HasSubstr("param 'p0' appears twice in the target"));
  std::vector<ShardParamInfo> shuffled = {params[2], params[0], params[1]};
  EXPECT_EQ(message(shuffled), "accepted");
}

TEST(ShardLayoutTest, ReshardingCoalescesContiguousRuns) {
  auto params = f32_params({16, 16, 16, 16});
  ShardLayout from = plan_shard_layout(params, {.world_size = 4, .alignment_bytes = 64});
  ShardLayout to = plan_shard_layout(params, {.world_size = 2, .alignment_bytes = 64});
  ReshardPlan plan = plan_reshard(from, to);
  // Rank 0 of 2 holds what ranks 0 and 1 of 4 held: one copy from each, params merged.
  EXPECT_THAT(plan.copies[0][0], ElementsAre(ShardCopy{.source_rank = 0, .target_offset = 0, .length = 16},
                                             ShardCopy{.source_rank = 1, .target_offset = 16, .length = 16}));
  ReshardPlan same = plan_reshard(from, from);
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT(same.copies[0][static_cast<std::size_t>(r)], ElementsAre(ShardCopy{.source_rank = r, .length = 16}));
  }
}

TEST(ShardLayoutTest, EqualityAndDescribeDistinguishLayouts) {
  auto params = f32_params({10, 0, 7});
  ShardLayout a = plan_shard_layout(params, {.world_size = 4, .alignment_bytes = 16});
  EXPECT_EQ(a, plan_shard_layout(params, {.world_size = 4, .alignment_bytes = 16}));
  ShardLayout b = plan_shard_layout(params, {.world_size = 3, .alignment_bytes = 16});
  EXPECT_NE(a, b);
  EXPECT_NE(describe(a), describe(b));
  EXPECT_THAT(describe(a), HasSubstr("buffer 0: group 0, 4-byte elements, 4 x 8 elements, 19 used, 15 padding (13 at the tail)"));
  EXPECT_THAT(describe(a), HasSubstr("params [p0@0 p1@12 p2@12]"));
  EXPECT_THAT(describe(plan_reshard(a, b)), HasSubstr("reshard plan: 17 elements"));
}

std::string rejection(std::span<const ShardParamInfo> params, const ShardLayoutOptions& o) {
  try {
    plan_shard_layout(params, o);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ShardLayoutTest, RejectsBadInputNamingTheFieldAndTheParam) {
  auto good = f32_params({4, 4});
  EXPECT_THAT(rejection(good, {.world_size = 0}), HasSubstr("world_size 0"));
  EXPECT_THAT(rejection(good, {.world_size = 2, .alignment_bytes = 48}), HasSubstr("alignment_bytes 48 is not a power of two"));
  EXPECT_THAT(rejection(good, {.world_size = 2, .alignment_bytes = 0}), HasSubstr("alignment_bytes 0"));
  EXPECT_THAT(rejection(good, {.world_size = 2, .shard_elements_multiple = 0}), HasSubstr("shard_elements_multiple 0"));
  auto negative = f32_params({4, -1});
  EXPECT_THAT(rejection(negative, {}), HasSubstr("param 1 ('p1'): count -1 is negative"));
  auto zero = good;
  zero[0].element_bytes = 0;
  EXPECT_THAT(rejection(zero, {}), HasSubstr("param 0 ('p0'): element_bytes is 0"));
  auto wide = good;
  wide[1].element_bytes = 8;
  EXPECT_THAT(rejection(wide, {.alignment_bytes = 4}),
              HasSubstr("param 1 ('p1'): alignment_bytes 4 is not a multiple of element_bytes 8"));
  auto odd = good;
  odd[0].element_bytes = 3;
  EXPECT_THAT(rejection(odd, {}), HasSubstr("param 0 ('p0'): alignment_bytes 64 is not a multiple of element_bytes 3"));
  auto group = good;
  group[1].group = -2;
  EXPECT_THAT(rejection(group, {}), HasSubstr("param 1 ('p1'): group -2"));
  auto huge = f32_params({std::int64_t{1} << 61, std::int64_t{1} << 61});
  EXPECT_THAT(rejection(huge, {}), HasSubstr("overflow"));
}

TEST(ShardLayoutTest, ReshardingRejectsDifferentModelsNamingTheFirstDifference) {
  auto params = f32_params({4, 5, 6});
  ShardLayout base = plan_shard_layout(params, {.world_size = 2});
  auto message = [&](std::vector<ShardParamInfo> other) { return reshard_rejection(plan_reshard, base, other); };
  EXPECT_THAT(message(f32_params({4, 5})), HasSubstr("the source layout has 3 params, the target 2"));
  auto renamed = params;
  renamed[1].name = "q1";
  EXPECT_THAT(message(renamed), HasSubstr("param 1 is 'p1' in the source, 'q1' in the target"));
  auto resized = params;
  resized[2].count = 7;
  resized[1].count = 9;
  EXPECT_THAT(message(resized), HasSubstr("param 1 ('p1') has 5 elements in the source, 9 in the target"));
  auto retyped = params;
  retyped[0].element_bytes = 2;
  EXPECT_THAT(message(retyped), HasSubstr("param 0 ('p0') has 4-byte elements in the source, 2-byte in the target"));
  auto regrouped = params;
  regrouped[2].group = 4;
  EXPECT_EQ(message(regrouped), "accepted");
}

}  // namespace
}  // namespace braid::engine
