#include "braid/trace/step_counters.h"

#include <random>

#include <gtest/gtest.h>

#include "braid/trace/trace_test_util.h"

namespace braid::trace {
namespace {

using testing::kMs;

std::int64_t length_of_union(std::vector<Interval> v) { return total_length(union_of(std::move(v))); }

TEST(IntervalTest, UnionMergesOverlappingNestedAndTouchingIntervals) {
  std::vector<Interval> u = union_of({{10, 20}, {0, 5}, {12, 15}, {5, 7}, {18, 30}, {40, 41}});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].start, 0);
  EXPECT_EQ(u[0].end, 7);   // [0,5) and [5,7) touch
  EXPECT_EQ(u[1].start, 10);
  EXPECT_EQ(u[1].end, 30);  // [12,15) nested, [18,30) overlapping
  EXPECT_EQ(u[2].start, 40);
  EXPECT_EQ(total_length(u), 7 + 20 + 1);
}

TEST(IntervalTest, EmptyAndReversedIntervalsCountForNothing) {
  EXPECT_TRUE(union_of({}).empty());
  EXPECT_TRUE(union_of({{5, 5}, {9, 3}}).empty());
  EXPECT_EQ(length_of_union({{5, 5}, {0, 2}, {9, 3}}), 2);
}

TEST(IntervalTest, UncoveredLengthOfHandMadeCases) {
  auto uncovered = [](std::vector<Interval> a, std::vector<Interval> b) {
    return uncovered_length(union_of(std::move(a)), union_of(std::move(b)));
  };
  EXPECT_EQ(uncovered({{0, 10}}, {}), 10);                  // nothing covers
  EXPECT_EQ(uncovered({}, {{0, 10}}), 0);                   // nothing to cover
  EXPECT_EQ(uncovered({{2, 8}}, {{0, 10}}), 0);             // a inside b
  EXPECT_EQ(uncovered({{0, 10}}, {{2, 8}}), 4);             // b inside a: both ends stick out
  EXPECT_EQ(uncovered({{0, 10}}, {{5, 20}}), 5);            // tail covered
  EXPECT_EQ(uncovered({{10, 20}}, {{0, 10}}), 10);          // b ends where a starts
  EXPECT_EQ(uncovered({{0, 10}}, {{1, 2}, {4, 5}, {9, 12}}), 7);  // several holes
  EXPECT_EQ(uncovered({{0, 4}, {6, 10}}, {{2, 8}}), 4);     // one b spans two a pieces
  EXPECT_EQ(uncovered({{0, 4}, {6, 10}, {20, 30}}, {{3, 7}, {25, 26}}), 3 + 3 + 9);
}

// The walk against the definition: count the uncovered unit cells one by one.
TEST(IntervalTest, UncoveredLengthMatchesCellCountingOnRandomSets) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> point(0, 60);
  std::uniform_int_distribution<int> count(0, 6);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Interval> a, b;
    for (int i = count(rng); i > 0; --i) a.push_back({point(rng), point(rng)});
    for (int i = count(rng); i > 0; --i) b.push_back({point(rng), point(rng)});
    std::int64_t expected = 0;
    for (int cell = 0; cell < 60; ++cell) {
      auto covers = [cell](const std::vector<Interval>& v) {
        for (const Interval& i : v) {
          if (i.start <= cell && cell < i.end) return true;
        }
        return false;
      };
      if (covers(a) && !covers(b)) ++expected;
    }
    ASSERT_EQ(uncovered_length(union_of(a), union_of(b)), expected) << "trial " << trial;
  }
}

TEST(StepIndexTest, AnEventAtABoundaryBelongsToTheNewStep) {
  std::vector<StepBoundary> steps{{.step = 0, .start_ns = 100}, {.step = 1, .start_ns = 200}};
  EXPECT_EQ(step_index_at(steps, 99), -1);
  EXPECT_EQ(step_index_at(steps, 100), 0);
  EXPECT_EQ(step_index_at(steps, 199), 0);
  EXPECT_EQ(step_index_at(steps, 200), 1);
  EXPECT_EQ(step_index_at(steps, 1'000'000), 1);
  EXPECT_EQ(step_index_at({}, 5), -1);
}

// One step starting at 0 with the given spans.
TraceData one_step(std::vector<Interval> compute, std::vector<Interval> comm) {
  TraceData d;
  d.steps.push_back({.step = 0, .start_ns = 0});
  for (const Interval& i : compute) d.compute.push_back({.name = "c", .start_ns = i.start, .end_ns = i.end});
  for (const Interval& i : comm) d.comm.push_back({.name = "x", .start_ns = i.start, .end_ns = i.end, .wire_bytes = 10});
  return d;
}

StepCounters only_step(const TraceData& d) {
  std::vector<StepCounters> c = step_counters(d);
  EXPECT_EQ(c.size(), 1u);
  return c.at(0);
}

TEST(StepCountersTest, CommunicationEntirelyInsideComputeIsFullyHidden) {
  StepCounters c = only_step(one_step({{0, 10 * kMs}}, {{2 * kMs, 5 * kMs}, {4 * kMs, 7 * kMs}}));
  EXPECT_EQ(c.compute_ns, 10 * kMs);
  EXPECT_EQ(c.comm_ns, 5 * kMs);  // union of [2,5) and [4,7)
  EXPECT_EQ(c.exposed_comm_ns, 0);
  EXPECT_DOUBLE_EQ(c.overlap_ratio(), 1.0);
  EXPECT_EQ(c.comm_ops, 2);
  EXPECT_EQ(c.wire_bytes, 20u);
}

TEST(StepCountersTest, CommunicationAfterComputeIsFullyExposed) {
  StepCounters c = only_step(one_step({{0, 6 * kMs}}, {{6 * kMs, 10 * kMs}}));
  EXPECT_EQ(c.comm_ns, 4 * kMs);
  EXPECT_EQ(c.exposed_comm_ns, 4 * kMs);
  EXPECT_DOUBLE_EQ(c.overlap_ratio(), 0.0);
  EXPECT_EQ(c.wall_ns, 10 * kMs);  // the last step ends with its last event
}

TEST(StepCountersTest, PartialOverlapAcrossNestedComputeAndGaps) {
  // Compute: [0,4) with [1,2) nested inside, then a gap, then [6,8). Comm: [3,9).
  // Covered by compute: [3,4) and [6,8) = 3 ms; exposed: [4,6) and [8,9) = 3 ms.
  StepCounters c = only_step(one_step({{0, 4 * kMs}, {1 * kMs, 2 * kMs}, {6 * kMs, 8 * kMs}}, {{3 * kMs, 9 * kMs}}));
  EXPECT_EQ(c.compute_ns, 6 * kMs);
  EXPECT_EQ(c.comm_ns, 6 * kMs);
  EXPECT_EQ(c.exposed_comm_ns, 3 * kMs);
  EXPECT_DOUBLE_EQ(c.overlap_ratio(), 0.5);
}

TEST(StepCountersTest, NoCommunicationMeansZeroOverlapNotPerfectOverlap) {
  StepCounters c = only_step(one_step({{0, 5 * kMs}}, {}));
  EXPECT_EQ(c.comm_ns, 0);
  EXPECT_EQ(c.exposed_comm_ns, 0);
  EXPECT_DOUBLE_EQ(c.overlap_ratio(), 0.0);
  EXPECT_EQ(c.wall_ns, 5 * kMs);
}

TEST(StepCountersTest, ZeroLengthCommunicationCountsAsAnOpWithoutTime) {
  StepCounters c = only_step(one_step({}, {{3 * kMs, 3 * kMs}}));
  EXPECT_EQ(c.comm_ops, 1);
  EXPECT_EQ(c.comm_ns, 0);
  EXPECT_DOUBLE_EQ(c.overlap_ratio(), 0.0);
}

TEST(StepCountersTest, CommunicationHiddenBehindTheNextStepsComputeIsNotExposed) {
  TraceData d;
  d.steps = {{.step = 0, .start_ns = 0}, {.step = 1, .start_ns = 10 * kMs}};
  d.compute = {{.name = "bwd0", .start_ns = 0, .end_ns = 8 * kMs}, {.name = "fwd1", .start_ns = 10 * kMs, .end_ns = 20 * kMs}};
  // Step 0's last bucket runs [7,13): 1 ms under bwd0, 2 ms idle, 3 ms under step 1's forward.
  d.comm = {{.name = "bucket", .start_ns = 7 * kMs, .end_ns = 13 * kMs, .wire_bytes = 100}};
  std::vector<StepCounters> c = step_counters(d);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].step, 0);
  EXPECT_EQ(c[0].comm_ns, 6 * kMs);
  EXPECT_EQ(c[0].exposed_comm_ns, 2 * kMs);
  EXPECT_EQ(c[0].compute_ns, 8 * kMs);
  EXPECT_EQ(c[0].wall_ns, 10 * kMs);
  EXPECT_EQ(c[0].wire_bytes, 100u);
  EXPECT_EQ(c[1].comm_ns, 0);       // the op belongs to the step it started in
  EXPECT_EQ(c[1].wire_bytes, 0u);
  EXPECT_EQ(c[1].compute_ns, 10 * kMs);
  EXPECT_EQ(c[1].wall_ns, 10 * kMs);
}

TEST(StepCountersTest, EventsBeforeTheFirstStepFormTheSetupStep) {
  TraceData d;
  d.steps = {{.step = 5, .start_ns = 10 * kMs}};
  d.compute = {{.name = "warmup", .start_ns = 2 * kMs, .end_ns = 4 * kMs}};
  d.comm = {{.name = "broadcast", .start_ns = 3 * kMs, .end_ns = 6 * kMs, .bytes = 8, .wire_bytes = 8}};
  std::vector<StepCounters> c = step_counters(d);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].step, kSetupStep);
  EXPECT_EQ(c[0].start_ns, 2 * kMs);
  EXPECT_EQ(c[0].wall_ns, 8 * kMs);  // to the first boundary
  EXPECT_EQ(c[0].exposed_comm_ns, 2 * kMs);
  EXPECT_EQ(c[0].bytes, 8u);
  EXPECT_EQ(c[1].step, 5);
  EXPECT_EQ(c[1].comm_ops, 0);
  EXPECT_EQ(c[1].wall_ns, 0);  // an empty last step has no end
}

TEST(StepCountersTest, WithoutStepsEverythingIsTheSetupStepAndNothingMeansNoRows) {
  EXPECT_TRUE(step_counters(TraceData{}).empty());
  TraceData d;
  d.comm = {{.name = "x", .start_ns = 1 * kMs, .end_ns = 3 * kMs}};
  std::vector<StepCounters> c = step_counters(d);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].step, kSetupStep);
  EXPECT_EQ(c[0].wall_ns, 2 * kMs);
  EXPECT_EQ(c[0].exposed_comm_ns, 2 * kMs);
}

TEST(StepCountersTest, TheSampleTraceHasHalfItsCommunicationExposed) {
  std::vector<StepCounters> c = step_counters(testing::two_step_trace(0, 0));
  ASSERT_EQ(c.size(), 2u);
  for (const StepCounters& s : c) {
    EXPECT_EQ(s.compute_ns, 6 * kMs);
    EXPECT_EQ(s.comm_ns, 4 * kMs);
    EXPECT_EQ(s.exposed_comm_ns, 2 * kMs);
    EXPECT_DOUBLE_EQ(s.overlap_ratio(), 0.5);
  }
  EXPECT_EQ(c[0].wall_ns, 10 * kMs);
  EXPECT_EQ(c[1].wall_ns, 8 * kMs);
}

}  // namespace
}  // namespace braid::trace
