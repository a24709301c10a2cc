// MoE routing against a brute-force reference written from the rule's statement (a choice is
// kept iff fewer than C choices of higher priority name the same expert; priority: choice slot,
// then token), on seeded random inputs, and on the corner cases: every token to one expert,
// experts that receive nothing, dropless mode; and the refused inputs.
#include "braid/parallel/moe_routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"
#include "error_message.h"

namespace braid::parallel {
namespace {

struct Reference {
  std::vector<std::int64_t> position;  // per choice, -1 dropped
  std::vector<std::int64_t> routed, kept;
  std::int64_t dropped = 0, dropped_tokens = 0;
};

Reference brute_force(const std::vector<std::int32_t>& ids, std::int64_t tokens, const MoeRoutingOptions& o,
                      std::int64_t capacity) {
  const std::int64_t k = o.top_k;
  auto priority = [&](std::int64_t choice) { return (choice % k) * tokens + choice / k; };
  Reference ref;
  ref.position.assign(ids.size(), -1);
  ref.routed.assign(static_cast<std::size_t>(o.experts), 0);
  ref.kept.assign(static_cast<std::size_t>(o.experts), 0);
  for (std::size_t a = 0; a < ids.size(); ++a) {
    std::int64_t before = 0;
    for (std::size_t b = 0; b < ids.size(); ++b) {
      if (ids[b] == ids[a] && priority(static_cast<std::int64_t>(b)) < priority(static_cast<std::int64_t>(a))) ++before;
    }
    ++ref.routed[static_cast<std::size_t>(ids[a])];
    if (before < capacity) {
      ref.position[a] = before;
      ++ref.kept[static_cast<std::size_t>(ids[a])];
    } else {
      ++ref.dropped;
    }
  }
  for (std::int64_t t = 0; t < tokens; ++t) {
    bool any = false;
    for (std::int64_t j = 0; j < k; ++j) any = any || ref.position[static_cast<std::size_t>(t * k + j)] >= 0;
    ref.dropped_tokens += any ? 0 : 1;
  }
  return ref;
}

// k distinct experts per token; skewed: half the draws go to the first two experts, so drops
// and idle experts both occur.
std::vector<std::int32_t> random_ids(SplitMix64& rng, std::int64_t tokens, int k, int experts, bool skewed) {
  std::vector<std::int32_t> ids;
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::vector<std::int32_t> picked;
    while (static_cast<int>(picked.size()) < k) {
      const std::uint64_t draw = rng.next();
      auto e = static_cast<std::int32_t>((skewed && draw % 2 == 0) ? (draw >> 8) % std::min(2, experts)
                                                                    : (draw >> 8) % static_cast<std::uint64_t>(experts));
      if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
    }
    ids.insert(ids.end(), picked.begin(), picked.end());
  }
  return ids;
}

TEST(MoeRouting, MatchesTheBruteForceRuleOnRandomInputs) {
  SplitMix64 rng(20261201);
  const int expert_choices[] = {1, 2, 3, 4, 6, 8, 16};
  const double factors[] = {0.25, 0.5, 1.0, 1.25, 2.0};
  int drops_seen = 0, idle_seen = 0;
  for (int trial = 0; trial < 600; ++trial) {
    MoeRoutingOptions o;
    o.experts = expert_choices[rng.next() % 7];
    std::vector<int> eps;
    for (int ep = 1; ep <= o.experts; ++ep) {
      if (o.experts % ep == 0) eps.push_back(ep);
    }
    o.ep_size = eps[rng.next() % eps.size()];
    o.top_k = std::min<int>(o.experts, 1 + static_cast<int>(rng.next() % 2));
    o.dropless = rng.next() % 5 == 0;
    o.capacity_factor = factors[rng.next() % 5];
    const auto tokens = static_cast<std::int64_t>(rng.next() % 65);
    const auto ids = random_ids(rng, tokens, o.top_k, o.experts, rng.next() % 2 == 0);
    const MoeRouting r = route_tokens(ids, tokens, o);
    const std::int64_t capacity =
        o.dropless ? tokens : static_cast<std::int64_t>(std::ceil(o.capacity_factor * tokens * o.top_k / o.experts));
    ASSERT_EQ(r.capacity, capacity) << "trial " << trial;
    const Reference ref = brute_force(ids, tokens, o, capacity);
    ASSERT_EQ(r.position_of_choice, ref.position) << "trial " << trial;
    ASSERT_EQ(r.routed_per_expert, ref.routed) << "trial " << trial;
    ASSERT_EQ(r.kept_per_expert, ref.kept) << "trial " << trial;
    ASSERT_EQ(r.dropped_choices, ref.dropped) << "trial " << trial;
    ASSERT_EQ(r.dropped_tokens, ref.dropped_tokens) << "trial " << trial;
    if (o.dropless) {
      ASSERT_EQ(r.dropped_choices, 0) << "trial " << trial;
    }
    const auto per_rank = r.kept_per_rank();
    ASSERT_EQ(std::accumulate(per_rank.begin(), per_rank.end(), std::int64_t{0}), r.kept_choices());
    for (int p = 0; p < o.ep_size; ++p) {
      std::int64_t sum = 0;
      for (int le = 0; le < o.local_experts(); ++le) sum += ref.kept[static_cast<std::size_t>(p * o.local_experts() + le)];
      ASSERT_EQ(per_rank[static_cast<std::size_t>(p)], sum);
    }
    drops_seen += ref.dropped > 0;
    idle_seen += std::count(ref.kept.begin(), ref.kept.end(), 0) > 0;
  }
  // The trials exercised what they are for.
  EXPECT_GT(drops_seen, 100);
  EXPECT_GT(idle_seen, 100);
}

TEST(MoeRouting, EveryTokenToOneExpertKeepsTheFirstCapacityTokens) {
  const MoeRoutingOptions o{.experts = 4, .ep_size = 2, .top_k = 1, .capacity_factor = 1.0};
  const std::vector<std::int32_t> ids(16, 2);
  const MoeRouting r = route_tokens(ids, 16, o);
  EXPECT_EQ(r.capacity, 4);  // ceil(1.0 x 16 x 1 / 4)
  EXPECT_EQ(r.kept_per_expert, (std::vector<std::int64_t>{0, 0, 4, 0}));
  EXPECT_EQ(r.routed_per_expert, (std::vector<std::int64_t>{0, 0, 16, 0}));
  for (int t = 0; t < 16; ++t) EXPECT_EQ(r.position_of_choice[static_cast<std::size_t>(t)], t < 4 ? t : -1);
  EXPECT_EQ(r.dropped_choices, 12);
  EXPECT_EQ(r.dropped_tokens, 12);
  EXPECT_EQ(r.kept_per_rank(), (std::vector<std::int64_t>{0, 4}));

  MoeRoutingOptions dropless = o;
  dropless.dropless = true;
  const MoeRouting all = route_tokens(ids, 16, dropless);
  EXPECT_EQ(all.dropped_choices, 0);
  EXPECT_EQ(all.kept_per_expert, (std::vector<std::int64_t>{0, 0, 16, 0}));
}

TEST(MoeRouting, FirstChoicesOfLaterTokensBeatSecondChoices) {
  // Capacity ceil(0.5 x 4 x 2 / 2) = 2. Token 0's second choice (expert 1) comes after every
  // first choice, so tokens 1 and 2 (first choice expert 1) take expert 1's two slots.
  const MoeRoutingOptions o{.experts = 2, .ep_size = 1, .top_k = 2, .capacity_factor = 0.5};
  const std::vector<std::int32_t> ids{0, 1, 1, 0, 1, 0, 0, 1};
  const MoeRouting r = route_tokens(ids, 4, o);
  EXPECT_EQ(r.capacity, 2);
  EXPECT_EQ(r.position_of_choice, (std::vector<std::int64_t>{0, -1, 0, -1, 1, -1, 1, -1}));
  EXPECT_EQ(r.dropped_tokens, 0);
}


TEST(MoeRouting, BadOptionsAndInputsAreNamed) {
  const std::vector<std::int32_t> ids{0, 1};
  auto with = [&](MoeRoutingOptions o, std::vector<std::int32_t> in = {0, 1}, std::int64_t tokens = 2) {
    return testing::error_message_of([&] { route_tokens(in, tokens, o); });
  };
  const MoeRoutingOptions ok{.experts = 4, .ep_size = 2, .top_k = 1};
  EXPECT_EQ(with(ok), "no error");
  EXPECT_NE(with({.experts = 6, .ep_size = 4, .top_k = 1}).find("experts (6) must be divisible by the EP group size (4)"),
            std::string::npos);
  EXPECT_NE(with({.experts = 4, .ep_size = 2, .top_k = 1, .capacity_factor = 0}).find("capacity factor must be > 0"),
            std::string::npos);
  EXPECT_NE(with({.experts = 4, .ep_size = 2, .top_k = 1, .capacity_factor = -1}).find("got -1"), std::string::npos);
  EXPECT_NE(with({.experts = 4, .ep_size = 2, .top_k = 1, .capacity_factor = NAN}).find("capacity factor"),
            std::string::npos);
  EXPECT_EQ(with({.experts = 4, .ep_size = 2, .top_k = 1, .capacity_factor = 0, .dropless = true}), "no error");
  EXPECT_NE(with({.experts = 4, .ep_size = 2, .top_k = 5}).find("top_k must be in [1, experts = 4], got 5"),
            std::string::npos);
  EXPECT_NE(with(ok, {0, 4}).find("token 1 choice 0 names expert 4, outside [0, 4)"), std::string::npos);
  EXPECT_NE(with(ok, {-1, 0}).find("token 0 choice 0 names expert -1"), std::string::npos);
  MoeRoutingOptions top2 = ok;
  top2.top_k = 2;
  EXPECT_NE(with(top2, {0, 1, 3, 3}).find("token 1 names expert 3 twice (choices 0 and 1)"), std::string::npos);
  EXPECT_NE(with(top2, {0, 1, 3}).find("3 expert ids for 2 tokens x top-2: expected 4"), std::string::npos);
  EXPECT_NE(with(ok, {}, -1).find("for -1 tokens"), std::string::npos);
  EXPECT_NE(with(ok).find("no error"), std::string::npos);
  EXPECT_NE(with(ok, {0, 9}).find("op moe routing"), std::string::npos);
}

}  // namespace
}  // namespace braid::parallel
