// Multi-process tests of GradSync's ZeRO stages 1 and 2 (programs/zero_scenarios.cc) on 1..4
// ranks over shared memory and TCP: every rank's reduce-scattered gradient shard equals its
// slice of allreduce(avg) of the same gradients, bit for bit (the scenario says why).
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class ZeroGradSyncTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(ZeroGradSyncTest, EveryRanksShardIsItsSliceOfTheAllreducedAverage) {
  expect_every_rank_passed(run_scenario(GetParam(), "zero_grad_sync"), "zero_grad_sync", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ZeroGradSyncTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{3, "tcp"}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
