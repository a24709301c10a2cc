// The queue behind the non-blocking collectives (async_collectives.h): one per communicator,
// kept as its attachment, with one background thread that runs the queued collectives one at
// a time, strictly in submission order. Since every rank issues the same collectives in the
// same order (the ordering contract), every rank runs them in the same order too, and the
// sequence numbers they take agree without any extra coordination.
//
//   CollectiveQueue& queue = detail::CollectiveAccess(comm).attachment<CollectiveQueue>();
//   Work w = queue.submit({.rank = comm.rank(), .op = "allreduce"},
//                         [&comm, ...] { allreduce(comm, ...); });   // runs in the background
//
// A task is a closure over the communicator's address: before the communicator moves, or is
// destroyed, quiesce() drains the queue (Communicator calls it), so no task outlives the
// address it captured. Before any collective starts on the communicator from another thread
// (a blocking allreduce, barrier, split), before_collective() drains the queue too, so the
// blocking collective runs after the queued ones, as issued.
//
// Who runs a task: the worker, or a thread that waits for it. A Work::wait() without a
// timeout on a task nobody has started runs that task, and the tasks queued before it, on the
// waiting thread (Note [The waiter runs its task]). Either way one task runs at a time, in
// submission order.
//
// The worker starts with the first submit() (a communicator that never issues an async
// collective costs no thread) and stays, asleep on a condition variable, until the queue is
// destroyed. A task's exception is caught where it runs and delivered through its Work; the
// worker itself never dies of one.
//
// Thread-safety: every method may be called from any thread, concurrently. drain() (and the
// hooks calling it) return at once when called from inside a task: a running task cannot
// wait for the queue it is part of.
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include "braid/base/error.h"
#include "braid/base/mutex.h"
#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"
#include "braid/comm/work.h"

namespace braid {

// Note [The waiter runs its task]
// A synchronous call from a framework (dist.all_reduce(t) in PyTorch: an async op, then
// wait()) pays two thread hand-offs on top of the collective: waking the worker, then waking
// the waiter. Each is a futex wake-up and a context switch, tens of microseconds on an
// oversubscribed VM, and since braid-run pins a rank (and its threads) to one CPU, the two
// threads of a rank take turns on that CPU. A small allreduce itself takes under a
// microsecond. The waiter is blocked anyway until its task is done, so when the worker has
// not started the task yet, the waiter takes it (and every task queued before it: they come
// first) and runs it itself. Order is kept (one task at a time, oldest first), and nothing
// can deadlock that did not before: the waiter was going to wait for exactly these tasks.
// A wait(timeout) does not do this: it promises to return at its timeout, and a task cannot
// be interrupted.

class CollectiveQueue : public CommAttachment {
 public:
  CollectiveQueue();
  // Drains the queue (each task is bounded by its own BRAID_TIMEOUT) and joins the worker.
  // REQUIRES: not called from a task.
  ~CollectiveQueue() override;
  CollectiveQueue(const CollectiveQueue&) = delete;
  CollectiveQueue& operator=(const CollectiveQueue&) = delete;

  // Queues `task` behind every task submitted before it; returns at once. The Work completes
  // when the task has run, with its exception if it threw. `context` (rank, op) names the
  // task in the Timeout of a Work::wait(timeout).
  Work submit(ErrorContext context, std::function<void()> task);

  // Blocks until every task submitted so far has finished (at once from inside a task).
  void drain() noexcept;
  // Whether a submitted task has not finished yet.
  bool busy() const;

  void quiesce() noexcept override { drain(); }
  void before_collective() noexcept override { drain(); }
  bool wants_before_collective() const noexcept override { return true; }

 private:
  // The tasks and who runs them (collective_queue.cc), shared with the Works submit() hands
  // out: a waiter may run its task itself, and a Work may outlive the queue.
  class Tasks;

  std::shared_ptr<Tasks> tasks_;
  Mutex start_mu_;
  std::thread worker_ BRAID_GUARDED_BY(start_mu_);  // started by the first submit
};

}  // namespace braid
