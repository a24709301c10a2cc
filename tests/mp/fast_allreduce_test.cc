// The latency-first allreduce paths (allreduce one_shot and two_shot, and the tuner's choice
// for small messages) through real ranks on one host:
//   - the 8 B / 4 KiB path allocates nothing once warm (a counting operator new, per thread,
//     around 2000 calls, in braid-fast-allreduce-rank);
//   - every rank's result is the rank-order sum, bit for bit, on f32 inputs whose sum depends
//     on the order of the additions, at uneven sizes and sizes spanning several rounds.
// Their failure paths (a frozen peer gives Timeout naming it, a killed one PeerLost, a
// different count Mismatch) are cases of shared_memory_failure_test.cc; the dtype x op grid
// is collectives_test.cc's (every registered algorithm).
#include <string>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

struct Case {
  std::string algorithm;
  int ranks;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.algorithm + "_" + std::to_string(info.param.ranks) + "ranks";
}

class FastAllreduceTest : public ::testing::TestWithParam<Case> {
 protected:
  LaunchResult run(const std::string& scenario) {
    LaunchOptions o;
    o.ranks = GetParam().ranks;
    o.program = test_program_path("braid-fast-allreduce-rank");
    o.args = {scenario, GetParam().algorithm};
    o.env = {{"BRAID_TIMEOUT", "30"}};
    o.timeout_seconds = 60;
    return launch(o);
  }
};

TEST_P(FastAllreduceTest, AllocatesNothingOnceWarm) {
  LaunchResult r = run("no-allocation");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("ALLOCATIONS " + GetParam().algorithm), GetParam().ranks) << r.output;
  EXPECT_EQ(r.count(": 0"), GetParam().ranks) << r.output;
}

TEST_P(FastAllreduceTest, EveryRankHoldsTheRankOrderSumBitForBit) {
  LaunchResult r = run("order-matters");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("ORDER-OK"), GetParam().ranks) << r.output;
  EXPECT_EQ(r.count("ORDER-FAIL"), 0) << r.output;
}

// 4 ranks on a 2-core machine: ranks outnumber cores (the yielding wait).
INSTANTIATE_TEST_SUITE_P(Algorithms, FastAllreduceTest,
                         ::testing::Values(Case{"one_shot", 2}, Case{"one_shot", 4}, Case{"two_shot", 3},
                                           Case{"two_shot", 4}, Case{"tuner", 2}, Case{"tuner", 4}),
                         case_name);

}  // namespace
}  // namespace braid::testing
