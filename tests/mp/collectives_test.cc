// Multi-process tests of allreduce, allgather, reduce_scatter, broadcast, reduce, gather and
// scatter: every registered algorithm (those that accept the world size) over dtypes x ops x
// counts x in-place x roots, checked bit for bit on every rank by the `collectives` scenario
// of braid-test-rank, for world sizes 1..5 over shared memory and TCP, and a mixed shm/TCP job
// on two emulated hosts.
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

}  // namespace
}  // namespace braid::testing
