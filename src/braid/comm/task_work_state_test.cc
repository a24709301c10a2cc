// The task-backed Work without processes: completion from another thread, error delivery,
// the non-fatal wait(timeout), and handle copies sharing one operation.
#include "braid/comm/task_work_state.h"

#include <chrono>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace braid {
namespace {

std::shared_ptr<TaskWorkState> make_state() {
  return std::make_shared<TaskWorkState>(ErrorContext{.rank = 3, .op = "allreduce"});
}

TEST(WorkTest, DefaultWorkIsComplete) {
  Work work;
  EXPECT_TRUE(work.completed());
  EXPECT_TRUE(work.test());
  work.wait(Seconds(0));
}

TEST(TaskWorkTest, PendingUntilFinished) {
  auto state = make_state();
  Work work(state);
  EXPECT_FALSE(work.completed());
  EXPECT_FALSE(work.test());
  state->finish(nullptr);
  EXPECT_TRUE(work.completed());
  EXPECT_TRUE(work.test());
  work.wait();
  work.wait(Seconds(0));  // done: a zero timeout is no reason to throw
}

TEST(TaskWorkTest, WaitBlocksUntilAnotherThreadFinishes) {
  auto state = make_state();
  Work work(state);
  std::thread runner([state] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    state->finish(nullptr);
  });
  const auto start = Clock::now();
  work.wait();
  EXPECT_GE(Seconds(Clock::now() - start).count(), 0.04);
  EXPECT_TRUE(work.completed());
  runner.join();
}

TEST(TaskWorkTest, TimeoutNamesRankAndOpAndIsNotFinal) {
  auto state = make_state();
  Work work(state);
  try {
    work.wait(Seconds(0.001));
    FAIL() << "wait returned before the task finished";
  } catch (const Timeout& e) {
    EXPECT_EQ(e.context().rank, 3);
    EXPECT_EQ(e.context().op, "allreduce");
    EXPECT_NE(std::string(e.what()).find("keeps running"), std::string::npos) << e.what();
  }
  state->finish(nullptr);
  work.wait(Seconds(1));  // the same handle collects the operation afterwards
}

TEST(TaskWorkTest, ErrorIsRethrownByEveryWaitAndByTest) {
  auto state = make_state();
  Work work(state);
  state->finish(std::make_exception_ptr(Mismatch({.rank = 3, .op = "allreduce"}, "counts differ")));
  EXPECT_TRUE(work.completed());
  EXPECT_THROW(work.wait(), Mismatch);
  EXPECT_THROW(work.wait(Seconds(1)), Mismatch);
  EXPECT_THROW(work.test(), Mismatch);
}

TEST(TaskWorkTest, CopiesObserveTheSameOperation) {
  auto state = make_state();
  Work first(state);
  Work second = first;
  std::thread runner([state] { state->finish(nullptr); });
  second.wait();
  EXPECT_TRUE(first.completed());
  runner.join();
}

}  // namespace
}  // namespace braid
