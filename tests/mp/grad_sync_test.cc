// Multi-process tests of braid::GradSync (programs/gradsync_scenarios.cc) on 1..4 ranks over
// shared memory and TCP.
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class GradSyncTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(GradSyncTest, AveragesExactlyLikeAPlainAllreduceWhateverTheReadinessOrder) {
  expect_every_rank_passed(run_scenario(GetParam(), "gradsync"), "gradsync", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GradSyncTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{3, "tcp"}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
