// The LibTorch MoE layer (braid::torch::MoeLayer, MoeDataParallel) through real rank processes
// (braid-run): EP = 2 and 4 equal EP = 1 (one process holding every expert, same seed, same
// global data) in outputs, losses with the auxiliary and z-losses, drop counts and every
// gradient, for top-1 and top-2, with drops, roomy capacity and dropless, unpipelined and
// pipelined (chunks 2, 4); bad layers fail on
// every rank with what is wrong. The rank program (programs/moe_layer_scenarios.cc) prints
// PASS/FAIL per check with the differences.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launch.h"

namespace braid::testing {
namespace {

LaunchResult run_ranks(int ranks, std::vector<std::string> args) {
  return launch({.ranks = ranks, .program = test_program_path("braid-moe-layer-rank"), .args = std::move(args),
                 .env = {{"BRAID_TIMEOUT", "60"}, {"OMP_NUM_THREADS", "1"}}, .timeout_seconds = 120});
}

void expect_equal_to_ep1(int ranks, int ep) {
  LaunchResult r = run_ranks(ranks, {"equal", "--ep", std::to_string(ep)});
  std::string what = std::to_string(ranks) + " ranks, ep " + std::to_string(ep);
  ASSERT_FALSE(r.timed_out) << what << "\n" << r.output;
  EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.output;
  EXPECT_EQ(r.count("FAIL"), 0) << what << "\n" << r.output;
  EXPECT_EQ(r.count("ERROR"), 0) << what << "\n" << r.output;
  EXPECT_EQ(r.count("PASS equal (rank"), ranks) << what << "\n" << r.output;
  // top-1, top-2 and one pipelined config each
  EXPECT_EQ(r.count("dropless drops nothing"), 3 * ranks) << what << "\n" << r.output;
  EXPECT_EQ(r.count("drops some"), 3 * ranks) << what << "\n" << r.output;
  EXPECT_EQ(r.count("chunks4 drops some"), ranks) << what << "\n" << r.output;
  EXPECT_EQ(r.count("chunks2 dropless drops nothing"), ranks) << what << "\n" << r.output;
}

TEST(MoeLayerTest, Ep2On2RanksEqualsEp1) { expect_equal_to_ep1(2, 2); }
TEST(MoeLayerTest, Ep2And4On4RanksEqualEp1) {
  expect_equal_to_ep1(4, 2);
  expect_equal_to_ep1(4, 4);
}

void expect_refused(const std::string& which, const std::string& kind, const std::string& text) {
  LaunchResult r = run_ranks(2, {"bad", "--case", which});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("ERROR " + kind), 2) << r.output;
  EXPECT_EQ(r.count(text), 2) << r.output;
  EXPECT_EQ(r.count("was accepted"), 0) << r.output;
}

TEST(MoeLayerTest, BadLayersFailOnEveryRank) {
  expect_refused("not-divisible", "InvalidArgument", "experts (3) must be divisible by the EP group size (2)");
  expect_refused("capacity", "InvalidArgument", "capacity factor must be > 0");
  expect_refused("experts-disagree", "Mismatch", "ranks disagree on experts: rank 0 has 4, rank 1 has 6");
  expect_refused("backward-twice", "InvalidArgument", "backward ran twice through one forward");
}

}  // namespace
}  // namespace braid::testing
