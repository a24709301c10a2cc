// Multi-process tests of point-to-point messaging, barrier and split: real rank processes
// launched by braid-run, for world sizes 1..5 over shared memory and over TCP.
#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

struct Grid {
  int ranks;
  std::string transport;  // "auto" (shm on one host) or "tcp"
  int emulated_hosts = 1;  // > 1: ranks claim different host ids, so shm and tcp mix
};

std::string grid_name(const ::testing::TestParamInfo<Grid>& info) {
  std::string hosts = info.param.emulated_hosts > 1 ? "_" + std::to_string(info.param.emulated_hosts) + "hosts" : "";
  return info.param.transport + "_" + std::to_string(info.param.ranks) + "ranks" + hosts;
}

class CommunicatorTest : public ::testing::TestWithParam<Grid> {
 protected:
  LaunchResult run(const std::string& scenario, std::vector<std::string> extra = {}) {
    LaunchOptions options;
    options.ranks = GetParam().ranks;
    options.program = test_program_path("braid-test-rank");
    options.args = {scenario};
    options.args.insert(options.args.end(), extra.begin(), extra.end());
    options.env = {{"BRAID_TRANSPORT", GetParam().transport}, {"BRAID_TIMEOUT", "60"},
                   {"BRAID_TEST_EMULATED_HOSTS", std::to_string(GetParam().emulated_hosts)}};
    LaunchResult result = launch(options);
    for (const auto& id : job_ids_in(result)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
    return result;
  }
  void expect_pass(const LaunchResult& r, const std::string& scenario) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.count("PASS " + scenario), GetParam().ranks) << r.output;
    EXPECT_EQ(r.count("FAIL"), 0) << r.output;
  }
};

TEST_P(CommunicatorTest, AllPairsExchangeVerifiedMessages) {
  // 0, 1, 4095, 4096, 1 MiB + 7 and 64 MiB bytes between every ordered pair (self included).
  expect_pass(run("pairs"), "pairs");
}

TEST_P(CommunicatorTest, InterleavedTagsMatchOutOfOrder) { expect_pass(run("tags"), "tags"); }

TEST_P(CommunicatorTest, BarrierHoldsEveryRankUntilTheLastArrives) { expect_pass(run("barrier"), "barrier"); }

TEST_P(CommunicatorTest, SplitFormsIndependentGroups) { expect_pass(run("split"), "split"); }

TEST_P(CommunicatorTest, InvalidArgumentsAreReportedAndHarmless) {
  LaunchResult r = run("bad-arguments");
  expect_pass(r, "bad-arguments");
  EXPECT_FALSE(r.lines_with("count must be >= 0, got -1").empty()) << r.output;
  EXPECT_FALSE(r.lines_with("out of range").empty()) << r.output;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CommunicatorTest,
                         ::testing::Values(Grid{1, "auto"}, Grid{2, "auto"}, Grid{3, "auto"}, Grid{4, "auto"},
                                           Grid{5, "auto"}, Grid{2, "tcp"}, Grid{3, "tcp"}, Grid{4, "tcp"},
                                           Grid{5, "tcp"}, Grid{4, "auto", 2}, Grid{5, "auto", 2}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
