#include "braid/parallel/unit_gather_tracker.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

// Four units of 400, 800, 400, 1200 bytes over 4 ranks (shards of a quarter).
UnitGatherTracker four_units(int cap) { return UnitGatherTracker({400, 800, 400, 1200}, {100, 200, 100, 300}, 4, cap); }

// A forward then a backward the way FullyShardedModule walks them: never more than the cap
// allocated, prefetches filling the room, every unit gathered twice, the counters exact.
TEST(UnitGatherTrackerTest, ForwardAndBackwardStayUnderTheCapAndPrefetchWhatFits) {
  for (int cap : {1, 2, 3}) {
    UnitGatherTracker t = four_units(cap);
    std::vector<int> issued;
    auto use = [&](int u, int direction) {
      if (t.demand(u)) issued.push_back(u);
      for (int v : t.prefetch_after(u, direction)) issued.push_back(v);
      t.gathered(u);
      EXPECT_LE(t.counters().gathered_now, cap);
      t.freed(u);
    };
    for (int u = 0; u < 4; ++u) use(u, +1);
    for (int u = 3; u >= 0; --u) use(u, -1);
    EXPECT_EQ(issued.size(), 8u) << cap;
    EXPECT_EQ(t.counters().max_gathered, std::min(cap, 4)) << cap;
    EXPECT_EQ(t.counters().gathered_now, 0);
    EXPECT_EQ(t.counters().gathered_bytes_now, 0);
    EXPECT_EQ(t.counters().allgathers, 8);
    EXPECT_EQ(t.counters().wire_bytes, 2u * 3u * (100 + 200 + 100 + 300));
    if (cap == 1) {
      EXPECT_EQ(t.counters().peak_gathered_bytes, 1200);
    }
    if (cap == 2) {
      EXPECT_EQ(t.counters().peak_gathered_bytes, 1600);  // units 2 and 3
    }
  }
}

TEST(UnitGatherTrackerTest, PrefetchSkipsGatheredUnitsAndStopsAtTheEnds) {
  UnitGatherTracker t = four_units(4);
  EXPECT_TRUE(t.demand(3));
  EXPECT_EQ(t.prefetch_after(3, +1), std::vector<int>{});
  EXPECT_EQ(t.prefetch_after(3, -1), (std::vector<int>{2, 1, 0}));
  EXPECT_FALSE(t.demand(1));  // already gathering
  EXPECT_EQ(t.state(1), UnitState::kGathering);
  t.gathered(1);
  EXPECT_EQ(t.state(1), UnitState::kGathered);
  t.freed(1);
  t.freed(1);  // freeing twice is harmless
  EXPECT_EQ(t.counters().gathered_now, 3);
}

// A pipeline chunk's units [1, 3): prefetch stays inside them in both directions, with room left.
TEST(UnitGatherTrackerTest, PrefetchStopsAtTheEndsOfAWindow) {
  UnitGatherTracker t = four_units(4);
  EXPECT_TRUE(t.demand(1));
  EXPECT_EQ(t.prefetch_after(1, +1, 1, 3), std::vector<int>{2});
  EXPECT_EQ(t.state(3), UnitState::kFree);
  t.freed(1);
  t.freed(2);
  EXPECT_TRUE(t.demand(2));
  EXPECT_EQ(t.prefetch_after(2, -1, 1, 3), std::vector<int>{1});
  EXPECT_EQ(t.state(0), UnitState::kFree);
  EXPECT_EQ(t.counters().gathered_now, 2);
}

TEST(UnitGatherTrackerTest, ADemandBeyondTheCapIsAnErrorNamingTheGatheredUnits) {
  UnitGatherTracker t = four_units(1);
  EXPECT_TRUE(t.demand(0));
  try {
    t.demand(1);
    FAIL() << "no error";
  } catch (const Mismatch& e) {
    EXPECT_NE(std::string(e.what()).find("0 (gathering)"), std::string::npos) << e.what();
  }
  t.count_reduce_scatter(3);
  EXPECT_EQ(t.counters().reduce_scatters, 1);
  EXPECT_EQ(t.counters().wire_bytes, 3u * 100 + 3u * 300);
  EXPECT_THROW(four_units(0), InvalidArgument);
  EXPECT_THROW(UnitGatherTracker({1}, {}, 1, 1), InvalidArgument);
}

}  // namespace
}  // namespace braid::parallel
