// The collective queue without processes: tasks stand in for collectives. Checks submission
// order, delivery of a task's exception through its Work, draining (by drain(), by the
// destructor, and not from inside a task), the non-fatal wait(timeout), and waiters that run
// their own tasks (Note [The waiter runs its task]) alongside the worker.
#include "braid/collectives/collective_queue.h"

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace braid {
namespace {

ErrorContext context(const char* op) { return {.rank = 0, .op = op}; }

TEST(CollectiveQueueTest, RunsTasksInSubmissionOrderOnOneOtherThread) {
  CollectiveQueue queue;
  std::vector<int> order;  // written by the worker only, read after drain()
  std::vector<std::thread::id> threads;
  std::vector<Work> works;
  for (int i = 0; i < 50; ++i) {
    works.push_back(queue.submit(context("allreduce"), [&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    }));
  }
  // With a timeout: a plain wait() may run the task on this thread (tested below).
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait(Seconds(30));  // any order
  queue.drain();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  for (auto id : threads) {
    EXPECT_EQ(id, threads.front());
    EXPECT_NE(id, std::this_thread::get_id());
  }
  EXPECT_FALSE(queue.busy());
}

TEST(CollectiveQueueTest, ExceptionGoesToItsWorkAndLaterTasksStillRun) {
  CollectiveQueue queue;
  Work failing = queue.submit(context("allgather"), [] { throw Mismatch({.rank = 0, .op = "allgather"}, "differ"); });
  std::atomic<bool> later_ran{false};
  Work later = queue.submit(context("barrier"), [&] { later_ran = true; });
  EXPECT_THROW(failing.wait(), Mismatch);
  later.wait();
  EXPECT_TRUE(later_ran);
}

TEST(CollectiveQueueTest, WaitTimeoutLeavesTheTaskRunning) {
  CollectiveQueue queue;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Work blocked = queue.submit(context("allreduce"), [released] { released.wait(); });
  EXPECT_TRUE(queue.busy());
  EXPECT_FALSE(blocked.test());
  EXPECT_THROW(blocked.wait(Seconds(0.01)), Timeout);
  release.set_value();
  blocked.wait(Seconds(10));
  EXPECT_TRUE(blocked.completed());
}

TEST(CollectiveQueueTest, DrainWaitsForEveryTask) {
  CollectiveQueue queue;
  std::atomic<int> done{0};
  for (int i = 0; i < 5; ++i) {
    queue.submit(context("broadcast"), [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++done;
    });
  }
  queue.drain();
  EXPECT_EQ(done, 5);
  EXPECT_FALSE(queue.busy());
  queue.quiesce();  // nothing pending: returns at once
  queue.before_collective();
}

TEST(CollectiveQueueTest, DrainFromATaskReturnsAtOnce) {
  // A queued collective starting on the worker calls before_collective() through
  // CollectiveAccess::begin_collective: it must not wait for itself.
  CollectiveQueue queue;
  Work work = queue.submit(context("allreduce"), [&] { queue.before_collective(); });
  work.wait(Seconds(10));
}

TEST(CollectiveQueueTest, DestructorRunsWhatIsStillQueued) {
  std::atomic<int> done{0};
  std::vector<Work> works;
  {
    CollectiveQueue queue;
    for (int i = 0; i < 5; ++i) {
      works.push_back(queue.submit(context("reduce"), [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ++done;
      }));
    }
  }
  EXPECT_EQ(done, 5);
  for (auto& w : works) {
    EXPECT_TRUE(w.completed());
    w.wait();  // the queue is gone: nothing to run, and nothing touched
  }
}

// A synchronous call, as dist.all_reduce(t) makes one: submit, then wait at once. When the
// worker has not taken the task yet, the waiter runs it; which of the two gets there first is
// the scheduler's choice, so the loop goes on until the waiter has run some (a worker that won
// every one of 2,000 races would mean the waiter never runs anything). Each task also calls
// before_collective(), as a queued collective does: from the waiter it must not wait for itself.
TEST(CollectiveQueueTest, AWaiterRunsTheTaskTheWorkerHasNotStarted) {
  CollectiveQueue queue;
  std::vector<int> order;  // written by one task at a time
  int on_waiter = 0;
  int submitted = 0;
  const auto self = std::this_thread::get_id();
  while (submitted < 2000 && on_waiter < 20) {
    std::thread::id ran_on;
    const int i = submitted++;
    Work work = queue.submit(context("allreduce"), [&, i] {
      queue.before_collective();
      order.push_back(i);
      ran_on = std::this_thread::get_id();
    });
    work.wait();
    if (ran_on == self) ++on_waiter;
  }
  EXPECT_GT(on_waiter, 0) << "the waiter ran none of " << submitted << " tasks";
  ASSERT_EQ(order.size(), static_cast<std::size_t>(submitted));
  for (int i = 0; i < submitted; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  EXPECT_FALSE(queue.busy());
}

// Waiters on several threads and the worker share the queue: every task runs exactly once, one
// at a time, in submission order, and each waiter's task is done when its wait returns.
TEST(CollectiveQueueTest, WaitersAndTheWorkerRunEachTaskOnceInOrder) {
  CollectiveQueue queue;
  constexpr int kTasks = 400;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::vector<Work> works;
  std::vector<std::atomic<bool>> done(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    works.push_back(queue.submit(context("allreduce"), [&, i] {
      if (running.fetch_add(1) != 0) overlapped = true;
      order.push_back(i);
      done[static_cast<std::size_t>(i)] = true;
      running.fetch_sub(1);
    }));
  }
  std::vector<std::thread> waiters;
  for (int t = 0; t < 3; ++t) {
    waiters.emplace_back([&, t] {
      for (int i = kTasks - 1 - t; i >= 0; i -= 3) {
        works[static_cast<std::size_t>(i)].wait();
        EXPECT_TRUE(done[static_cast<std::size_t>(i)]);
      }
    });
  }
  for (auto& w : waiters) w.join();
  queue.drain();
  EXPECT_FALSE(overlapped);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

// A task's error reaches the waiter that ran it, and the tasks after it still run.
TEST(CollectiveQueueTest, AnErrorReachesAWaiterThatRanTheTask) {
  CollectiveQueue queue;
  for (int i = 0; i < 50; ++i) {
    Work failing = queue.submit(context("allgather"), [] { throw Mismatch({.rank = 0, .op = "allgather"}, "differ"); });
    EXPECT_THROW(failing.wait(), Mismatch);
    EXPECT_THROW(failing.wait(), Mismatch);  // every time
  }
  std::atomic<bool> later_ran{false};
  queue.submit(context("barrier"), [&] { later_ran = true; }).wait();
  EXPECT_TRUE(later_ran);
}

TEST(CollectiveQueueTest, UnusedQueueDrainsAtOnce) {
  CollectiveQueue queue;
  EXPECT_FALSE(queue.busy());
  queue.drain();  // must not block without a worker
}

}  // namespace
}  // namespace braid
