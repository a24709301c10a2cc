// The queue behind the non-blocking collectives (async_collectives.h): one per communicator,
// kept as its attachment, with one background thread that runs the queued collectives one at
// a time, strictly in submission order. Since every rank issues the same collectives in the
// same order (the ordering contract), every rank's worker runs them in the same order too, and
// the sequence numbers they take agree without any extra coordination.
//
//   CollectiveQueue& queue = detail::CollectiveAccess(comm).attachment<CollectiveQueue>();
//   Work w = queue.submit({.rank = comm.rank(), .op = "allreduce"},
//                         [&comm, ...] { allreduce(comm, ...); });   // runs on the worker
//
// A task is a closure over the communicator's address: before the communicator moves, or is
// destroyed, quiesce() drains the queue (Communicator calls it), so no task outlives the
// address it captured. Before any collective starts on the communicator from another thread
// (a blocking allreduce, barrier, split), before_collective() drains the queue too, so the
// blocking collective runs after the queued ones, as issued.
//
// The worker starts with the first submit() (a communicator that never issues an async
// collective costs no thread) and stays, asleep on a condition variable, until the queue is
// destroyed. A task's exception is caught on the worker and delivered through its Work; the
// worker itself never dies of one.
//
// Thread-safety: every method may be called from any thread, concurrently. Tasks run on the
// worker only, one at a time. drain() (and the hooks calling it) return at once when called on
// the worker itself: a running task cannot wait for the queue it is part of.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "braid/base/error.h"
#include "braid/base/mutex.h"
#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"
#include "braid/comm/task_work_state.h"
#include "braid/comm/work.h"

namespace braid {

class CollectiveQueue : public CommAttachment {
 public:
  CollectiveQueue() = default;
  // Drains the queue (each task is bounded by its own BRAID_TIMEOUT) and joins the worker.
  // REQUIRES: not called from a task.
  ~CollectiveQueue() override;
  CollectiveQueue(const CollectiveQueue&) = delete;
  CollectiveQueue& operator=(const CollectiveQueue&) = delete;

  // Queues `task` behind every task submitted before it; returns at once. The Work completes
  // when the task has run, with its exception if it threw. `context` (rank, op) names the
  // task in the Timeout of a Work::wait(timeout).
  Work submit(ErrorContext context, std::function<void()> task);

  // Blocks until every task submitted so far has finished (at once on the worker thread).
  void drain() noexcept;
  // Whether a submitted task has not finished yet.
  bool busy() const;

  void quiesce() noexcept override { drain(); }
  void before_collective() noexcept override { drain(); }

 private:
  struct Task {
    std::function<void()> run;
    std::shared_ptr<TaskWorkState> work;
  };

  void run_worker();
  bool on_worker_locked() const BRAID_REQUIRES(mu_) { return worker_.get_id() == std::this_thread::get_id(); }

  mutable Mutex mu_;
  CondVar task_queued_;                         // tasks_ gained a task, or stopping_ was set
  CondVar drained_;                             // tasks_ emptied with no task running
  std::deque<Task> tasks_ BRAID_GUARDED_BY(mu_);      // not yet started, oldest first
  bool running_ BRAID_GUARDED_BY(mu_) = false;        // a task is on the worker now
  bool stopping_ BRAID_GUARDED_BY(mu_) = false;       // the destructor has begun
  std::thread worker_ BRAID_GUARDED_BY(mu_);          // started by the first submit
};

}  // namespace braid
