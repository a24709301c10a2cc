// Multi-process tests of alltoall and alltoallv: the `alltoall` scenario of braid-test-rank
// (every registered algorithm x dtypes x counts, irregular alltoallv layouts with zero counts,
// argument checks), checked bit for bit on every rank, for world sizes 1..5 over shared memory
// and TCP, and a mixed shm/TCP job on two emulated hosts.
#include <string>

#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class AlltoallTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(AlltoallTest, AlltoallAndAlltoallvMatchTheReferenceExactly) {
  expect_every_rank_passed(run_scenario(GetParam(), "alltoall"), "alltoall", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AlltoallTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{5, "auto"}, WorldGrid{1, "tcp"},
                                           WorldGrid{2, "tcp"}, WorldGrid{3, "tcp"}, WorldGrid{4, "tcp"},
                                           WorldGrid{5, "tcp"}, WorldGrid{4, "auto", 2},
                                           WorldGrid{5, "auto", 2}, WorldGrid{4, "tcp", 2}),
                         grid_name);

// BRAID_ALGO_ALLTOALLV forces alltoallv's algorithm like BRAID_ALGO_<OP> does for the others
// (the scenario's calls that name no algorithm take it; those naming one still get theirs).
TEST(AlltoallvForcedTest, BraidAlgoAlltoallvPairwiseRuns) {
  LaunchOptions options;
  options.ranks = 3;
  options.program = test_program_path("braid-test-rank");
  options.args = {"alltoall"};
  options.env = {{"BRAID_TRANSPORT", "auto"}, {"BRAID_TIMEOUT", "60"}, {"BRAID_ALGO_ALLTOALLV", "pairwise"}};
  expect_every_rank_passed(launch(options), "alltoall", 3);
}

// The last rank expects one element more from rank 0 in an alltoallv. pairwise (tcp): the
// envelope carries the sender's true count, so the last rank raises Mismatch and reports it to
// every rank; shm_direct (one host over shm) and hierarchical (two emulated hosts): every rank
// holds every rank's counts before any payload moves and raises the same Mismatch naming the
// pair. Either way nobody hangs, nobody finishes cleanly, and the last rank's error names the
// operation and both sizes.
class AlltoallvMismatchTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(AlltoallvMismatchTest, CountDisagreementRaisesMismatchOnEveryRank) {
  const WorldGrid& grid = GetParam();
  LaunchOptions options;
  options.ranks = grid.ranks;
  options.program = test_program_path("braid-test-rank");
  options.args = {"alltoallv-mismatch"};
  options.env = {{"BRAID_TRANSPORT", grid.transport}, {"BRAID_TIMEOUT", "60"},
                 {"BRAID_TEST_EMULATED_HOSTS", std::to_string(grid.emulated_hosts)}};
  options.braid_run_flags = {"--grace", "20"};
  LaunchResult r = launch(options);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_EQ(r.count("MISMATCH rank"), grid.ranks) << r.output;
  bool named = false;
  for (const auto& line : r.lines_with("MISMATCH rank " + std::to_string(grid.ranks - 1))) {
    named = named || (line.find("alltoallv #") != std::string::npos && line.find("4000 bytes") != std::string::npos &&
                      line.find("4004 bytes") != std::string::npos);
  }
  EXPECT_TRUE(named) << r.output;
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AlltoallvMismatchTest,
                         ::testing::Values(WorldGrid{3, "auto"}, WorldGrid{3, "tcp"}, WorldGrid{4, "auto", 2}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
