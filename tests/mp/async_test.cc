// Multi-process tests of the non-blocking collectives (async_collectives.h), through the
// scenarios of tests/mp/programs/async_scenarios.cc and async_failure_scenarios.cc: every
// async collective against the reference and the blocking results, ordering against blocking
// and point-to-point calls, bad arguments at the call, moves with pending work (world sizes
// 1..4 over shared memory and TCP); a count mismatch surfacing as Mismatch at wait(), and a
// wait(timeout) that expires without harm (world sizes 2..4).
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class AsyncTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(AsyncTest, EveryAsyncCollectiveMatchesReferenceAndBlockingAndKeepsOrder) {
  expect_every_rank_passed(run_scenario(GetParam(), "async"), "async", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AsyncTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{1, "tcp"}, WorldGrid{2, "tcp"},
                                           WorldGrid{3, "tcp"}, WorldGrid{4, "tcp"}, WorldGrid{4, "auto", 2}),
                         grid_name);

class AsyncFailureTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(AsyncFailureTest, CountMismatchRaisesMismatchAtWaitOnEveryRank) {
  LaunchResult r = run_scenario(GetParam(), "async-mismatch");
  expect_every_rank_passed(r, "async-mismatch", GetParam().ranks);
  EXPECT_EQ(r.count("MISMATCH-AT-WAIT"), GetParam().ranks) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "a mismatch must be reported at once, not at BRAID_TIMEOUT (60 s)";
}

TEST_P(AsyncFailureTest, WaitTimeoutExpiresWithoutHarm) {
  LaunchResult r = run_scenario(GetParam(), "async-timeout");
  expect_every_rank_passed(r, "async-timeout", GetParam().ranks);
  EXPECT_EQ(r.count("TIMEOUT rank"), GetParam().ranks - 1) << r.output;  // all but the late rank
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AsyncFailureTest,
                         ::testing::Values(WorldGrid{2, "auto"}, WorldGrid{3, "auto"}, WorldGrid{4, "auto"},
                                           WorldGrid{2, "tcp"}, WorldGrid{3, "tcp"}, WorldGrid{4, "tcp"}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
