// The mesh arithmetic on its own: every coordinate round-trips for every factorization of
// 1..16 ranks into 2, 3 and 4 axes; the groups along every subset of axes are disjoint, cover
// the world, have the right size and agree with group_index / position_in_group; bad layouts
// are refused with the layout in the message.
#include "braid/base/mesh_layout.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

const std::vector<std::string> kNames{"dp", "pp", "tp", "ep"};

MeshLayout layout_of(const std::vector<int>& sizes) {
  std::vector<MeshAxis> axes;
  int world = 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    axes.push_back({kNames[i], sizes[i]});
    world *= sizes[i];
  }
  return MeshLayout(std::move(axes), world);
}

// Every subset of the layout's axes, by bit mask.
std::vector<std::vector<std::string>> axis_subsets(const MeshLayout& layout) {
  const std::size_t n = layout.axes().size();
  std::vector<std::vector<std::string>> out;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    std::vector<std::string> subset;
    for (std::size_t i = 0; i < n; ++i) {
      if (mask & (1u << i)) subset.push_back(layout.axes()[i].name);
    }
    out.push_back(subset);
  }
  return out;
}

void expect_round_trips(const MeshLayout& layout) {
  for (int rank = 0; rank < layout.world(); ++rank) {
    const std::vector<int> c = layout.coordinates(rank);
    ASSERT_EQ(layout.rank_of(c), rank) << layout.describe();
    for (std::size_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(layout.coordinate(rank, layout.axes()[i].name), c[i]);
      EXPECT_GE(c[i], 0);
      EXPECT_LT(c[i], layout.axes()[i].size);
    }
  }
}

// Groups of one kind: disjoint, covering, of group_size, each member agreeing on its color
// and holding its own position.
void expect_groups_partition(const MeshLayout& layout, const std::vector<std::string>& axes) {
  const int size = layout.group_size(axes);
  ASSERT_EQ(size * layout.group_count(axes), layout.world());
  std::vector<int> color_of(static_cast<std::size_t>(layout.world()), -1);
  std::set<int> colors;
  for (int rank = 0; rank < layout.world(); ++rank) {
    const std::vector<int> members = layout.group(rank, axes);
    ASSERT_EQ(static_cast<int>(members.size()), size) << layout.describe();
    EXPECT_NE(std::find(members.begin(), members.end(), rank), members.end());
    const int color = layout.group_index(rank, axes);
    EXPECT_GE(color, 0);
    EXPECT_LT(color, layout.group_count(axes));
    colors.insert(color);
    for (int position = 0; position < size; ++position) {
      const int member = members[static_cast<std::size_t>(position)];
      EXPECT_EQ(layout.group_index(member, axes), color) << layout.describe();
      EXPECT_EQ(layout.position_in_group(member, axes), position) << layout.describe();
      EXPECT_EQ(layout.group(member, axes), members) << "every member sees the same group";
    }
    // Disjointness: no rank belongs to two groups of one kind.
    if (color_of[static_cast<std::size_t>(rank)] == -1) {
      for (int m : members) {
        EXPECT_EQ(color_of[static_cast<std::size_t>(m)], -1) << "rank " << m << " in two groups";
        color_of[static_cast<std::size_t>(m)] = color;
      }
    }
  }
  EXPECT_EQ(static_cast<int>(colors.size()), layout.group_count(axes));
  EXPECT_EQ(std::count(color_of.begin(), color_of.end(), -1), 0) << "groups cover the world";
}

TEST(MeshLayoutTest, EveryFactorizationOfOneToSixteenRanksRoundTripsAndPartitions) {
  for (int axes = 2; axes <= 4; ++axes) {
    for (int world = 1; world <= 16; ++world) {
      for (const std::vector<int>& sizes : mesh_factorizations(world, axes)) {
        const MeshLayout layout = layout_of(sizes);
        expect_round_trips(layout);
        for (const auto& subset : axis_subsets(layout)) expect_groups_partition(layout, subset);
      }
    }
  }
}

TEST(MeshLayoutTest, InnermostAxisVariesFastest) {
  const MeshLayout layout({{"dp", 2}, {"pp", 2}, {"tp", 2}}, 8);
  EXPECT_EQ(layout.coordinates(5), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(layout.group(5, {"tp"}), (std::vector<int>{4, 5}));
  EXPECT_EQ(layout.group(5, {"pp"}), (std::vector<int>{5, 7}));
  EXPECT_EQ(layout.group(5, {"dp"}), (std::vector<int>{1, 5}));
  EXPECT_EQ(layout.group(5, {"tp", "pp"}), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.group(5, {"pp", "tp", "tp"}), layout.group(5, {"tp", "pp"})) << "axes are a set";
  EXPECT_EQ(layout.group(5, {}), (std::vector<int>{5}));
  EXPECT_EQ(layout.group(5, {"dp", "pp", "tp"}).size(), 8u);
  EXPECT_EQ(layout.describe(), "dp=2 x pp=2 x tp=2");
  EXPECT_EQ(layout.size("pp"), 2);
  EXPECT_TRUE(layout.has("tp"));
  EXPECT_FALSE(layout.has("ep"));
}

// braid-train's pipeline layout: with tp = 1, world rank r is stage r % pp.
TEST(MeshLayoutTest, DpPpTpWithOneTpRankIsStageRModPp) {
  const MeshLayout layout({{"dp", 3}, {"pp", 4}, {"tp", 1}}, 12);
  for (int r = 0; r < 12; ++r) {
    EXPECT_EQ(layout.coordinate(r, "pp"), r % 4);
    EXPECT_EQ(layout.coordinate(r, "dp"), r / 4);
  }
}

TEST(MeshLayoutTest, FactorizationsAreLexicographicAndComplete) {
  EXPECT_EQ(mesh_factorizations(4, 2), (std::vector<std::vector<int>>{{1, 4}, {2, 2}, {4, 1}}));
  EXPECT_EQ(mesh_factorizations(1, 3), (std::vector<std::vector<int>>{{1, 1, 1}}));
  EXPECT_EQ(mesh_factorizations(7, 1), (std::vector<std::vector<int>>{{7}}));
  // 12 = 2^2 * 3 into 3 ordered factors: C(4,2) * C(3,2) = 18.
  const auto twelve = mesh_factorizations(12, 3);
  EXPECT_EQ(twelve.size(), 18u);
  EXPECT_TRUE(std::is_sorted(twelve.begin(), twelve.end()));
  for (const auto& t : twelve) EXPECT_EQ(t[0] * t[1] * t[2], 12);
  EXPECT_THROW(mesh_factorizations(0, 3), InvalidArgument);
  EXPECT_THROW(mesh_factorizations(4, 0), InvalidArgument);
}

void expect_refused(const std::vector<MeshAxis>& axes, int world, const std::string& needle) {
  try {
    MeshLayout layout(axes, world);
    ADD_FAILURE() << "accepted " << layout.describe() << " on " << world;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MeshLayoutTest, BadLayoutsAreRefusedNamingTheLayout) {
  expect_refused({{"dp", 3}, {"pp", 2}, {"tp", 2}}, 8, "layout dp=3 x pp=2 x tp=2 has 12 ranks but the world has 8");
  expect_refused({{"dp", 0}, {"tp", 2}}, 0, "the world must hold at least one rank");
  expect_refused({{"dp", 0}, {"tp", 2}}, 2, "layout dp=0 x tp=2: axis dp has size 0");
  expect_refused({{"dp", -2}, {"tp", -1}}, 2, "axis dp has size -2");
  expect_refused({{"dp", 2}, {"dp", 2}}, 4, "layout dp=2 x dp=2: axis dp appears twice");
  expect_refused({{"", 2}, {"tp", 2}}, 4, "axis 0 has an empty name");
  expect_refused({}, 4, "layout (no axes) has 1 ranks but the world has 4");
  expect_refused({{"dp", 1 << 30}, {"tp", 1 << 30}}, 8, "has more than 2147483647 ranks");
  EXPECT_NO_THROW(MeshLayout({}, 1));
}

TEST(MeshLayoutTest, OutOfRangeQueriesAreInvalidArguments) {
  const MeshLayout layout({{"dp", 2}, {"tp", 2}}, 4);
  EXPECT_THROW(layout.coordinates(4), InvalidArgument);
  EXPECT_THROW(layout.coordinates(-1), InvalidArgument);
  EXPECT_THROW(layout.rank_of({2, 0}), InvalidArgument);
  EXPECT_THROW(layout.rank_of({0}), InvalidArgument);
  EXPECT_THROW(layout.size("pp"), InvalidArgument);
  EXPECT_THROW(layout.group(0, {"pp"}), InvalidArgument);
  try {
    layout.coordinate(0, "ep");
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("layout dp=2 x tp=2 has no axis ep"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid
