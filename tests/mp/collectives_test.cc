// Multi-process tests of allreduce, allgather, reduce_scatter, broadcast, reduce, gather and
// scatter: every registered algorithm (those that accept the world size) over dtypes x ops x
// counts x in-place x roots, checked bit for bit on every rank by the `collectives` scenario
// of braid-test-rank, for world sizes 1..5 over shared memory and TCP, and mixed shm/TCP jobs
// on emulated hosts: 2 x 2 ranks, and for allreduce 2 x 3 and 3 x 2 too (where hierarchical
// and host_striped apply; rank r is on host r % hosts, so hosts interleave in rank order).
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class CollectivesTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(CollectivesTest, EveryAlgorithmMatchesTheReferenceExactly) {
  expect_every_rank_passed(run_scenario(GetParam(), "collectives"), "collectives", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectivesTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{5, "auto"}, WorldGrid{1, "tcp"},
                                           WorldGrid{2, "tcp"}, WorldGrid{3, "tcp"}, WorldGrid{4, "tcp"},
                                           WorldGrid{5, "tcp"}, WorldGrid{4, "auto", 2}),
                         grid_name);

// The allreduce grid alone on 2 hosts x 3 ranks and 3 hosts x 2 (the whole grid on 6 ranks
// would double the suite's time for collectives that do not look at hosts).
class AllreduceOnEmulatedHostsTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(AllreduceOnEmulatedHostsTest, EveryAlgorithmMatchesTheReferenceExactly) {
  expect_every_rank_passed(run_scenario(GetParam(), "collectives", {"allreduce"}), "collectives", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AllreduceOnEmulatedHostsTest,
                         ::testing::Values(WorldGrid{6, "auto", 2}, WorldGrid{6, "auto", 3}), grid_name);

// host_striped where every host holds the same number (>= 2) of ranks: the tuner picks it,
// and ranks agree bit for bit on inputs whose sum depends on the reduction order. 3 ranks on
// 2 hosts (2 + 1): it refuses, a caller naming it gets InvalidArgument, the default runs the
// leader variant.
class HostStripedTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(HostStripedTest, ChosenWhereHostsAreEqualRefusedElsewhere) {
  const WorldGrid& grid = GetParam();
  const bool striped = grid.ranks % grid.emulated_hosts == 0 && grid.ranks / grid.emulated_hosts >= 2;
  expect_every_rank_passed(run_scenario(grid, "host-striped", {striped ? "striped" : "uneven"}), "host-striped",
                           grid.ranks);
}

INSTANTIATE_TEST_SUITE_P(EmulatedHosts, HostStripedTest,
                         ::testing::Values(WorldGrid{4, "auto", 2}, WorldGrid{6, "auto", 2}, WorldGrid{6, "auto", 3},
                                           WorldGrid{3, "auto", 2}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
