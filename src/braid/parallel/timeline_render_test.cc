#include "braid/parallel/timeline_render.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace braid::parallel {
namespace {

TEST(AsciiTimeline, OneFOneBTwoStages) {
  // F = 1, B = I + W = 1: stage 1 answers each forward with its backward at once.
  SimulationResult r = simulate(make_schedule({ScheduleKind::k1F1B, 2, 2, 1}), {1, 0.5, 0.5, 0});
  EXPECT_EQ(render_ascii_timeline(r),
            "stage  0 | F0 F1 .  B0 .  B1\n"
            "stage  1 | .  F0 B0 F1 B1 . \n");
}

TEST(AsciiTimeline, LongerActionsFillSeveralCellsAndChunksGetLetters) {
  SimulationResult r = simulate(make_schedule({ScheduleKind::kInterleaved1F1B, 1, 1, 2}), {2, 2, 2, 0});
  EXPECT_EQ(render_ascii_timeline(r), "stage  0 | F0a F0b B0b B0b B0a B0a\n");
}

TEST(ChromeTrace, OneProcessPerStageWithComputeAndWaits) {
  SimulationResult r = simulate(make_schedule({ScheduleKind::kGPipe, 2, 2, 1}), {1, 1, 1, 0});
  nlohmann::json doc = nlohmann::json::parse(simulated_chrome_trace(r));
  int compute = 0;
  int waits = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "compute") ++compute;
    if (e["cat"] == "wait") {
      ++waits;
      EXPECT_GT(e["dur"].get<double>(), 0);
    }
  }
  EXPECT_EQ(compute, 8);  // 2 stages x 2 micro-batches x (F, B)
  EXPECT_GT(waits, 0);    // stage 1 waits for its first activation
  EXPECT_EQ(doc["otherData"]["schedule"], "gpipe");
  EXPECT_DOUBLE_EQ(doc["otherData"]["makespan"].get<double>(), r.makespan);
}

}  // namespace
}  // namespace braid::parallel
