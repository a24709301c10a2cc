// The collective queue without processes: tasks stand in for collectives. Checks submission
// order, delivery of a task's exception through its Work, draining (by drain(), by the
// destructor, and not by the worker itself), and the non-fatal wait(timeout).
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
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait();  // any order
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
  for (auto& w : works) EXPECT_TRUE(w.completed());
}

TEST(CollectiveQueueTest, UnusedQueueDrainsAtOnce) {
  CollectiveQueue queue;
  EXPECT_FALSE(queue.busy());
  queue.drain();  // must not block without a worker
}

}  // namespace
}  // namespace braid
