// Multi-process tests of point-to-point messaging, barrier and split: real rank processes
// launched by braid-run, for world sizes 1..5 over shared memory and over TCP.
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class CommunicatorTest : public ::testing::TestWithParam<WorldGrid> {
 protected:
  LaunchResult run(const std::string& scenario) { return run_scenario(GetParam(), scenario); }
  void expect_pass(const LaunchResult& r, const std::string& scenario) {
    expect_every_rank_passed(r, scenario, GetParam().ranks);
  }
};

TEST_P(CommunicatorTest, AllPairsExchangeVerifiedMessages) {
  // 0, 1, 4095, 4096, 1 MiB + 7 and 64 MiB bytes between every ordered pair (self included).
  expect_pass(run("pairs"), "pairs");
}

TEST_P(CommunicatorTest, InterleavedTagsMatchOutOfOrder) { expect_pass(run("tags"), "tags"); }

// Any-source receives: every sender reported once with its bytes, MPI's order kept (p2p_scenarios.cc).
TEST_P(CommunicatorTest, AnySourceReceivesReportTheirSenders) { expect_pass(run("any-source"), "any-source"); }

// isendv / irecvv: gather sends and scatter receives against contiguous ones, every pairing,
// every pair; a null piece is refused naming the rank, the peer and the operation.
TEST_P(CommunicatorTest, PiecesAreGatheredAndScatteredExactly) {
  LaunchResult r = run("pieces");
  expect_pass(r, "pieces");
  EXPECT_FALSE(r.lines_with("[rank 0, peer " + std::to_string(1 % GetParam().ranks) + ", op recv]").empty()) << r.output;
  EXPECT_FALSE(r.lines_with("piece 1 of 2 is null with 4 bytes").empty()) << r.output;
}

TEST_P(CommunicatorTest, BarrierHoldsEveryRankUntilTheLastArrives) { expect_pass(run("barrier"), "barrier"); }

TEST_P(CommunicatorTest, SplitFormsIndependentGroups) { expect_pass(run("split"), "split"); }

TEST_P(CommunicatorTest, InvalidArgumentsAreReportedAndHarmless) {
  LaunchResult r = run("bad-arguments");
  expect_pass(r, "bad-arguments");
  EXPECT_FALSE(r.lines_with("count must be >= 0, got -1").empty()) << r.output;
  EXPECT_FALSE(r.lines_with("out of range").empty()) << r.output;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CommunicatorTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{5, "auto"}, WorldGrid{2, "tcp"},
                                           WorldGrid{3, "tcp"}, WorldGrid{4, "tcp"}, WorldGrid{5, "tcp"},
                                           WorldGrid{4, "auto", 2}, WorldGrid{5, "auto", 2}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
