#include "braid/comm/topology.h"

#include <gtest/gtest.h>

namespace braid {
namespace {

TEST(TopologyTest, GroupsRanksByHostInRankOrder) {
  Topology t({"b", "a", "b", "c", "a"});
  EXPECT_EQ(t.num_hosts(), 3);
  EXPECT_EQ(t.host_of(0), 0);  // hosts are numbered by their lowest rank
  EXPECT_EQ(t.host_of(1), 1);
  EXPECT_EQ(t.ranks_on_host(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(t.ranks_on_host(1), (std::vector<int>{1, 4}));
  EXPECT_EQ(t.local_rank(4), 1);
  EXPECT_EQ(t.local_size(3), 1);
  EXPECT_TRUE(t.same_host(1, 4));
  EXPECT_FALSE(t.same_host(0, 1));
}

TEST(TopologyTest, UniformRanksPerHostOnlyWhenEveryHostHoldsAsMany) {
  EXPECT_EQ(Topology({"a", "b", "a", "b"}).uniform_ranks_per_host(), 2);
  EXPECT_EQ(Topology({"a", "a", "a"}).uniform_ranks_per_host(), 3);
  EXPECT_EQ(Topology({"a", "b", "a"}).uniform_ranks_per_host(), 0);
}

TEST(TopologyTest, SubsetRenumbers) {
  Topology t({"x", "y", "x", "y"});
  Topology s = t.subset({3, 2, 1});
  EXPECT_EQ(s.num_hosts(), 2);
  EXPECT_TRUE(s.same_host(0, 2));  // old ranks 3 and 1 are both on y
  EXPECT_EQ(s.local_rank(2), 1);
}

}  // namespace
}  // namespace braid
