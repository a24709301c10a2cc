#include "braid/trace/trace_recorder.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/trace/trace_test_util.h"

namespace braid::trace {
namespace {

using testing::kMs;
using testing::TempDir;

void record_one_of_everything(TraceRecorder& t) {
  t.step(0);
  { ComputeScope scope(t, "forward"); }
  t.begin_compute("backward");
  t.end_compute();
  t.mark("ready");
  {
    CommScope op(&t, "allreduce");
    EXPECT_EQ(op.active(), t.enabled());
    op.event().bytes = 100;
  }
  t.record_comm({.name = "manual", .start_ns = 1, .end_ns = 2});
  t.record_compute({.name = "manual", .start_ns = 1, .end_ns = 2});
  t.name_lane(3, "tp comm");
}

TEST(TraceRecorderTest, ADisabledRecorderRecordsNothingAndWritesNothing) {
  TraceRecorder t;
  EXPECT_FALSE(t.enabled());
  EXPECT_EQ(t.rank(), -1);
  record_one_of_everything(t);
  t.end_compute();  // not even misuse is noticed: it does nothing at all
  CommScope op(t, "x");
  EXPECT_FALSE(op.active());
  CommScope no_recorder(nullptr, "x");  // the pointer form: null means "not tracing"
  EXPECT_FALSE(no_recorder.active());
  ComputeScope no_compute(nullptr, "y");
  TraceData d = t.snapshot();
  EXPECT_TRUE(d.compute.empty() && d.comm.empty() && d.marks.empty() && d.steps.empty() && d.lane_names.empty());
  EXPECT_TRUE(t.step_counters().empty());
  TempDir dir;
  EXPECT_EQ(t.write_trace_file(dir.path()), "");
  EXPECT_EQ(t.flush(), "");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(TraceRecorderTest, RecordsSpansOpsMarksAndSteps) {
  TraceRecorder t(TraceOptions{.rank = 2});
  EXPECT_TRUE(t.enabled());
  EXPECT_EQ(t.rank(), 2);
  std::int64_t before = now_ns();
  record_one_of_everything(t);
  TraceData d = t.snapshot();
  EXPECT_EQ(d.rank, 2);
  ASSERT_EQ(d.steps.size(), 1u);
  EXPECT_GE(d.steps[0].start_ns, before);
  ASSERT_EQ(d.compute.size(), 3u);
  EXPECT_EQ(d.compute[0].name, "forward");
  EXPECT_EQ(d.compute[1].name, "backward");
  EXPECT_EQ(d.compute[0].lane, kComputeLane);
  for (int i = 0; i < 2; ++i) EXPECT_LE(d.steps[0].start_ns, d.compute[i].start_ns);
  for (int i = 0; i < 2; ++i) EXPECT_LE(d.compute[i].start_ns, d.compute[i].end_ns);
  ASSERT_EQ(d.comm.size(), 2u);
  EXPECT_EQ(d.comm[0].name, "allreduce");
  EXPECT_EQ(d.comm[0].bytes, 100u);
  EXPECT_EQ(d.comm[0].lane, kCommLane);
  EXPECT_FALSE(d.comm[0].failed);
  EXPECT_LE(d.comm[0].start_ns, d.comm[0].end_ns);
  ASSERT_EQ(d.marks.size(), 1u);
  EXPECT_EQ(d.marks[0].name, "ready");
  EXPECT_EQ(lane_label(d, 3), "tp comm");
  EXPECT_EQ(lane_label(d, kCommLane), "comm");
  // The anchor pairs a steady reading taken at construction with the system clock.
  EXPECT_LE(d.anchor.steady_ns, before);
  EXPECT_GT(d.anchor.system_ns, 1'600'000'000LL * 1'000'000'000LL);
}

TEST(TraceRecorderTest, BeginEndNestPerThreadAndUnmatchedEndIsAnError) {
  TraceRecorder t(TraceOptions{});
  t.begin_compute("outer");
  t.begin_compute("inner");
  t.end_compute();
  t.end_compute();
  TraceData d = t.snapshot();
  ASSERT_EQ(d.compute.size(), 2u);
  EXPECT_EQ(d.compute[0].name, "inner");  // recorded when it closes
  EXPECT_EQ(d.compute[1].name, "outer");
  EXPECT_LE(d.compute[1].start_ns, d.compute[0].start_ns);
  EXPECT_GE(d.compute[1].end_ns, d.compute[0].end_ns);
  EXPECT_THROW(t.end_compute(), InvalidArgument);
  // A span opened on one thread cannot be closed from another.
  t.begin_compute("main thread");
  std::thread other([&] { EXPECT_THROW(t.end_compute(), InvalidArgument); });
  other.join();
  t.end_compute();
}

TEST(TraceRecorderTest, ACommScopeUnwoundByAnExceptionIsMarkedFailed) {
  TraceRecorder t(TraceOptions{});
  try {
    CommScope op(t, "allreduce");
    throw std::runtime_error("peer lost");
  } catch (const std::runtime_error&) {
  }
  ASSERT_EQ(t.snapshot().comm.size(), 1u);
  EXPECT_TRUE(t.snapshot().comm[0].failed);
}

TEST(TraceRecorderTest, CountersComeFromTheRecordedEvents) {
  TraceRecorder t(TraceOptions{});
  std::int64_t t0 = now_ns();  // step() reads the clock; the hand-timed events follow it
  t.step(7);
  t.record_compute({.name = "backward", .start_ns = t0 + 1 * kMs, .end_ns = t0 + 7 * kMs});
  t.record_comm({.name = "bucket 0", .start_ns = t0 + 5 * kMs, .end_ns = t0 + 9 * kMs, .wire_bytes = 64});
  std::vector<StepCounters> c = t.step_counters();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].step, 7);
  EXPECT_EQ(c[0].comm_ns, 4 * kMs);
  EXPECT_EQ(c[0].exposed_comm_ns, 2 * kMs);
  EXPECT_EQ(c[0].wire_bytes, 64u);
}

TEST(TraceRecorderTest, SeveralThreadsRecordingAtOnceLoseNothing) {
  TraceRecorder t(TraceOptions{.rank = 1});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&t, id] {
      for (int i = 0; i < kPerThread; ++i) {
        t.begin_compute(fmt::format("outer {}", id));
        { ComputeScope inner(t, fmt::format("inner {}", id), id); }
        t.end_compute();
        CommScope op(t, "op", kCommLane + id);
        op.event().wire_bytes = 1;
        if (i % 100 == 0) t.mark("tick");
      }
    });
  }
  for (std::thread& th : threads) th.join();
  TraceData d = t.snapshot();
  EXPECT_EQ(d.compute.size(), std::size_t{2 * kThreads * kPerThread});
  EXPECT_EQ(d.comm.size(), std::size_t{kThreads * kPerThread});
  EXPECT_EQ(d.marks.size(), std::size_t{kThreads * kPerThread / 100});
  // Each thread's begin/end paired with its own spans: every outer span is named after the
  // thread that opened it, and contains that thread's inner spans' count.
  std::vector<int> outer(kThreads), inner(kThreads), ops(kThreads);
  for (const ComputeSpan& s : d.compute) {
    if (s.name.starts_with("outer")) ++outer.at(std::stoi(s.name.substr(6)));
    if (s.name.starts_with("inner")) {
      ASSERT_EQ(s.lane, std::stoi(s.name.substr(6)));
      ++inner.at(s.lane);
    }
    ASSERT_LE(s.start_ns, s.end_ns);
  }
  for (const CommEvent& c : d.comm) ++ops.at(c.lane - kCommLane);
  for (int id = 0; id < kThreads; ++id) {
    EXPECT_EQ(outer[id], kPerThread);
    EXPECT_EQ(inner[id], kPerThread);
    EXPECT_EQ(ops[id], kPerThread);
  }
  EXPECT_EQ(d.dropped_events, 0u);
}

TEST(TraceRecorderTest, BeyondMaxEventsEventsAreCountedAsDropped) {
  TraceRecorder t(TraceOptions{.max_events = 3});
  for (int i = 0; i < 5; ++i) t.mark("m");
  t.record_comm({.name = "x"});
  t.step(1);  // boundaries are always kept
  TraceData d = t.snapshot();
  EXPECT_EQ(d.marks.size(), 3u);
  EXPECT_TRUE(d.comm.empty());
  EXPECT_EQ(d.dropped_events, 3u);
  EXPECT_EQ(d.steps.size(), 1u);
}

TEST(TraceRecorderTest, FromEnvironmentIsEnabledOnlyWhenBraidTraceIsSet) {
  ::unsetenv("BRAID_TRACE");
  EXPECT_FALSE(from_environment(0).enabled());
  TempDir dir;
  std::string trace_dir = dir.file("traces");  // created at flush
  ::setenv("BRAID_TRACE", trace_dir.c_str(), 1);
  {
    TraceRecorder t = from_environment(3);
    ::unsetenv("BRAID_TRACE");
    ASSERT_TRUE(t.enabled());
    EXPECT_EQ(t.rank(), 3);
    t.mark("hello");
    EXPECT_EQ(t.flush(), trace_dir + "/braid-trace-rank3.json");
    std::filesystem::remove(trace_dir + "/braid-trace-rank3.json");
  }  // the destructor writes the file again
  EXPECT_TRUE(std::filesystem::exists(trace_dir + "/braid-trace-rank3.json"));
  for (const auto& entry : std::filesystem::directory_iterator(trace_dir)) {
    EXPECT_EQ(entry.path().filename(), "braid-trace-rank3.json") << "a temporary file was left behind";
  }
}

TEST(TraceRecorderTest, MovingKeepsTheEventsAndAssignmentFlushesTheReplacedRecorder) {
  TempDir dir;
  TraceRecorder a(TraceOptions{.rank = 0, .output_dir = dir.path()});
  a.mark("kept");
  TraceRecorder b = std::move(a);
  EXPECT_FALSE(a.enabled());  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(b.snapshot().marks.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("braid-trace-rank0.json")));
  b = TraceRecorder(TraceOptions{.rank = 1});
  EXPECT_TRUE(std::filesystem::exists(dir.file("braid-trace-rank0.json")));
  EXPECT_EQ(b.rank(), 1);
}

}  // namespace
}  // namespace braid::trace
