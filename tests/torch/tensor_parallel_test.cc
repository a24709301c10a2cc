// The tensor-parallel layers (braid::torch) and braid-train's TP GPT through real rank processes
// (braid-run, tp = world): on 2 and 4 ranks, with and without sequence parallelism, the TP model's
// loss, logits and gathered gradients equal the single-process GPT's (vocabulary 37, padded);
// the padding rows get no gradient; the RNG streams and the global gradient norm behave; a
// model tp does not split fails on every rank with the layer's name. The rank program
// (programs/tensor_parallel_scenarios.cc) prints PASS/FAIL per check with the differences.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launch.h"

namespace braid::testing {
namespace {

LaunchResult run_ranks(int ranks, std::vector<std::string> args, double timeout = 240) {
  return launch({.ranks = ranks, .program = test_program_path("braid-tp-rank"), .args = std::move(args),
                 .env = {{"BRAID_TIMEOUT", "60"}, {"OMP_NUM_THREADS", "1"}}, .timeout_seconds = timeout});
}

// Every rank exits 0, prints its final "PASS <scenario>" line and no FAIL line.
void expect_passes(int ranks, const std::vector<std::string>& args) {
  LaunchResult r = run_ranks(ranks, args);
  std::string what = std::to_string(ranks) + " ranks: " + args[0] + (args.size() > 1 ? " " + args[1] : "");
  ASSERT_FALSE(r.timed_out) << what << "\n" << r.output;
  EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.output;
  EXPECT_EQ(r.count("FAIL"), 0) << what << "\n" << r.output;
  EXPECT_EQ(r.count("ERROR"), 0) << what << "\n" << r.output;
  std::string last = "PASS " + args[0] + (args.size() > 1 ? " " + args[1] : "") + " (rank";
  EXPECT_EQ(r.count(last), ranks) << what << "\n" << r.output;
  // The comparisons' differences, for the log.
  for (const std::string& line : r.lines_with("max_abs_diff")) std::printf("%s\n", line.c_str());
}

TEST(TensorParallelTest, GptGradientsEqualTheSingleProcessModel) {
  for (int ranks : {2, 4}) {
    expect_passes(ranks, {"gpt-gradients"});
    expect_passes(ranks, {"gpt-gradients", "--sp"});
  }
}

TEST(TensorParallelTest, SequenceParallelEqualsTensorParallel) {
  for (int ranks : {2, 4}) expect_passes(ranks, {"sp-equals-tp"});
}

TEST(TensorParallelTest, RngStreamsAndState) {
  for (int ranks : {2, 4}) expect_passes(ranks, {"rng"});
}

TEST(TensorParallelTest, GlobalGradientNormCountsReplicatedParametersOnce) {
  for (int ranks : {2, 4}) {
    expect_passes(ranks, {"clip"});
    expect_passes(ranks, {"clip", "--sp"});
  }
}

TEST(TensorParallelTest, HeadsThatTpDoesNotSplitFailOnEveryRank) {
  LaunchResult r = run_ranks(3, {"bad-heads"}, 120);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("ERROR InvalidArgument"), 3) << r.output;
  EXPECT_EQ(r.count("block0 attention"), 3) << r.output;
  EXPECT_EQ(r.count("PASS bad-heads"), 0) << r.output;
}

}  // namespace
}  // namespace braid::testing
