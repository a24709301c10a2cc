// Every tool that takes a schedule or an operation by name reads it with the one parser of
// its vocabulary (base/pipeline_schedule_kind.h, base/op_kind.h): the canonical name and its
// aliases work in each, and an unknown name is refused by each with the same message, the
// accepted names listed. Sizes and steps are tiny: these check names, not numbers.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "launch.h"
#include "usage_error.h"

namespace braid::testing {
namespace {

const std::string kScheduleRefusal =
    "--schedule: unknown schedule 'pipedream' (accepted: gpipe, 1f1b, interleaved:V or zb1 (alias zb-h1))";

LaunchResult under_braid_run(const std::string& tool, int ranks, std::vector<std::string> args) {
  return launch({.ranks = ranks, .program = tool_path(tool), .args = std::move(args), .env = {{"BRAID_TIMEOUT", "60"}},
                 .timeout_seconds = 120});
}

TEST(ToolVocabulary, EverySpellingOfZeroBubbleWorksInBraidPlanAndBraidPipeline) {
  for (const std::string name : {"zb1", "zb-h1"}) {
    ToolResult plan = run_tool("braid-plan", "bubble --pp 4 -m 8 --schedule " + name);
    EXPECT_EQ(plan.exit_code, 0) << name << "\n" << plan.output;
    EXPECT_NE(plan.output.find("zb1: p = 4, m = 8"), std::string::npos) << name << "\n" << plan.output;
    ToolResult pipeline = run_tool("braid-pipeline", "schedule -p 4 -m 8 --schedule " + name);
    EXPECT_EQ(pipeline.exit_code, 0) << name << "\n" << pipeline.output;
    EXPECT_NE(pipeline.output.find("zb1 p=4 m=8 v=1"), std::string::npos) << name << "\n" << pipeline.output;
  }
}

TEST(ToolVocabulary, InterleavedWithItsChunksWorksInBraidPlanAndBraidPipeline) {
  ToolResult plan = run_tool("braid-plan", "bubble --pp 4 -m 8 -v 3 --schedule interleaved:2");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("interleaved: p = 4, m = 8, v = 2"), std::string::npos) << plan.output;
  ToolResult pipeline = run_tool("braid-pipeline", "schedule -p 4 -m 8 --schedule interleaved:2");
  EXPECT_EQ(pipeline.exit_code, 0) << pipeline.output;
  EXPECT_NE(pipeline.output.find("interleaved:2 p=4 m=8 v=2"), std::string::npos) << pipeline.output;
}

TEST(ToolVocabulary, AnUnknownScheduleIsRefusedWithTheSameListEverywhere) {
  expect_usage_error("braid-plan", "bubble --schedule pipedream", kScheduleRefusal);
  expect_usage_error("braid-plan", "step --pp 2 --schedule pipedream", kScheduleRefusal);
  expect_usage_error("braid-pipeline", "schedule --schedule pipedream", kScheduleRefusal);
  LaunchResult run = under_braid_run("braid-pipeline", 2, {"run", "--schedules", "1f1b,pipedream"});
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_GE(run.count("--schedules: unknown schedule 'pipedream' (accepted: gpipe, 1f1b, interleaved:V or zb1 "
                      "(alias zb-h1))"),
            1)
      << run.output;
}

#ifdef BRAID_TEST_TRAIN
TEST(ToolVocabulary, BraidTrainTakesTheSameSchedules) {
  LaunchResult unknown = under_braid_run("braid-train", 2, {"--pp", "2", "--schedule", "pipedream", "--quiet"});
  EXPECT_NE(unknown.exit_code, 0) << unknown.output;
  EXPECT_GE(unknown.count(kScheduleRefusal), 1) << unknown.output;
  // zb-h1 passes the schedule check and reaches the next one (the batch does not split).
  LaunchResult alias =
      under_braid_run("braid-train", 2, {"--pp", "2", "--schedule", "zb-h1", "--batch", "3", "--quiet"});
  EXPECT_NE(alias.exit_code, 0) << alias.output;
  EXPECT_EQ(alias.count("unknown schedule"), 0) << alias.output;
  EXPECT_GE(alias.count("--batch 3 is not divisible"), 1) << alias.output;
}
#endif

TEST(ToolVocabulary, EverySpellingOfAnOperationWorksInBraidPlan) {
  for (const std::string name : {"reduce_scatter", "reduce-scatter"}) {
    ToolResult r = run_tool("braid-plan", "collective --op " + name + " --bytes 1M --ranks 4 --json");
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
  }
  for (const std::string name : {"sendrecv", "send/recv"}) {
    ToolResult r = run_tool("braid-plan", "collective --op " + name + " --bytes 1M --ranks 2 --json");
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
  }
}

TEST(ToolVocabulary, BraidBenchTakesTheSameOperationNames) {
  LaunchResult alias = under_braid_run("braid-bench", 2, {"reduce-scatter", "-b", "8K", "-e", "8K", "-n", "1", "-w", "0"});
  EXPECT_EQ(alias.exit_code, 0) << alias.output;
  EXPECT_GE(alias.count("braid-bench reduce_scatter: 2 ranks"), 1) << alias.output;
  expect_usage_error("braid-bench", "tune -o /dev/null --ops reduce-scatter,allreduse",
                     "--ops: unknown operation 'allreduse' (accepted: allreduce, reduce_scatter (alias reduce-scatter), "
                     "allgather, broadcast, reduce, alltoall, alltoallv, gather or scatter)");
}

TEST(ToolVocabulary, AnUnknownOperationIsRefusedListingWhatTheToolTakes) {
  expect_usage_error("braid-plan", "collective --op allreduse",
                     "--op: unknown operation 'allreduse' (accepted: send/recv (alias sendrecv), allreduce, "
                     "reduce_scatter (alias reduce-scatter), allgather, broadcast or alltoall)");
}

}  // namespace
}  // namespace braid::testing
