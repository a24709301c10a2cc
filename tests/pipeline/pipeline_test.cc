// Multi-process tests of the pipeline runtime: braid-pipeline-rank trains the plain-C++ MLP on
// 1, 2 and 4 stages under every schedule through braid-run, and each rank checks its layers'
// gradients and parameters against single-process training (see pipeline_rank.cc for the
// tolerance). Plus the failure path: mismatched activation shapes end the job with an error
// naming both stages, not a hang.
#include <gtest/gtest.h>

#include <string>

#include "launch.h"

namespace braid::testing {
namespace {

struct PipelineCase {
  int stages;
  std::string schedule;
  int microbatches;
};

std::string case_name(const ::testing::TestParamInfo<PipelineCase>& info) {
  std::string name = info.param.schedule;
  for (char& c : name) {
    if (c == ':') c = '_';
  }
  name.append("_p")
      .append(std::to_string(info.param.stages))
      .append("_m")
      .append(std::to_string(info.param.microbatches));
  return name;
}

LaunchResult run_rank_program(int ranks, std::vector<std::string> args) {
  LaunchOptions options;
  options.ranks = ranks;
  options.program = test_program_path("braid-pipeline-rank");
  options.args = std::move(args);
  options.env = {{"BRAID_TIMEOUT", "60"}};
  options.timeout_seconds = 90;
  return launch(options);
}

class PipelineTraining : public ::testing::TestWithParam<PipelineCase> {};

TEST_P(PipelineTraining, MatchesSingleProcessTraining) {
  const PipelineCase& c = GetParam();
  LaunchResult r = run_rank_program(c.stages, {"train", c.schedule, std::to_string(c.microbatches), "3"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("PASS train " + c.schedule), c.stages) << r.output;
  EXPECT_EQ(r.count("FAIL"), 0) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineTraining,
                         ::testing::Values(PipelineCase{1, "1f1b", 4}, PipelineCase{1, "interleaved:2", 4},
                                           PipelineCase{2, "gpipe", 8}, PipelineCase{2, "1f1b", 8},
                                           PipelineCase{2, "interleaved:2", 8}, PipelineCase{2, "interleaved:4", 4},
                                           PipelineCase{2, "zb1", 8}, PipelineCase{2, "1f1b", 1},
                                           PipelineCase{4, "gpipe", 8}, PipelineCase{4, "1f1b", 8},
                                           PipelineCase{4, "interleaved:2", 8}, PipelineCase{4, "interleaved:2", 4},
                                           PipelineCase{4, "zb1", 8}, PipelineCase{4, "zb1", 3}),
                         case_name);

TEST(PipelineFailure, MismatchedActivationShapesNameBothStages) {
  for (int ranks : {2, 4}) {
    LaunchResult r = run_rank_program(ranks, {"shape-mismatch", "1f1b"});
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_NE(r.exit_code, 0) << r.output;
    // Both ends of the boundary report it (each compares both shapes).
    EXPECT_EQ(
        r.count(
            "activation shape mismatch: stage 0 (chunk 0, virtual stage 0) produces [3, 10] (output_shape) but stage 1 "
            "(chunk 0, virtual stage 1) expects [3, 11] (input_shape)"),
        2)
        << r.output;
    EXPECT_EQ(r.count("PASS"), 0) << r.output;
  }
}

TEST(PipelineFailure, WrongOutputShapeNamesTheStageAndAction) {
  LaunchResult r = run_rank_program(2, {"wrong-output", "1f1b", "0", "2"});
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("pipeline: stage 0: F(mb 2, chunk 0) returned shape [3, 9] with 27 elements, but its output_shape "
                    "is [3, 10]"),
            1)
      << r.output;
  EXPECT_EQ(r.count("PASS"), 0) << r.output;
}

TEST(PipelineFailure, FailedMiddleStageDoesNotHangTheOthers) {
  // Stage 1 of 4 fails at F(mb 1) with the receive of micro-batch 0's gradient already posted
  // (prefetch), which will never be matched: stage 2 waits for activation 1 before it runs
  // B(mb 0). The runtime gives up on it after 2 s and poisons the communicator, so every rank
  // stops long before BRAID_TIMEOUT (60 s here), which is what the bound below tells apart.
  LaunchResult r = run_rank_program(4, {"wrong-output", "1f1b", "1", "1"});
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 45) << r.output;
  EXPECT_EQ(r.count("pipeline: stage 1: F(mb 1, chunk 0) returned shape [3, 9]"), 1) << r.output;
  EXPECT_EQ(r.count("ERROR"), 4) << r.output;  // the others stop with an error naming the cause
  EXPECT_EQ(r.count("PASS"), 0) << r.output;
}

TEST(PipelineFailure, ScheduleForAnotherGroupSizeIsRefusedEverywhere) {
  LaunchResult r = run_rank_program(2, {"wrong-size"});
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_GE(r.count("pipeline: the communicator has 2 ranks but the schedule has 3 stages (p)"), 1) << r.output;
  EXPECT_EQ(r.count("PASS"), 0) << r.output;
}

TEST(PipelineTrainingGroups, TwoPipelinesFromSplitTrainIndependently) {
  // World of 4 split into two 2-stage pipelines (the pipeline axis of DP x PP).
  for (const char* schedule : {"1f1b", "zb1", "interleaved:2"}) {
    LaunchResult r = run_rank_program(4, {"train", schedule, "4", "2", "2"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.count(std::string("PASS train ") + schedule), 4) << r.output;
  }
}

}  // namespace
}  // namespace braid::testing
