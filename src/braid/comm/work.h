// A handle on an operation in flight (c10d's Work contract):
//
//   Work w = comm.isend(...);            // or braid::iallreduce(comm, ...): returns at once
//   ...                                  // compute; the buffers must stay alive and untouched
//   w.wait();                            // == while (!w.test()) sleep-ish; rethrows the op's error
//
// - wait() returns once the operation has completed successfully and its buffers may be
//   reused; if it failed, wait() rethrows its error (every time it is called).
// - wait(timeout) throws braid::Timeout, naming the rank and the operation, if the operation
//   has not finished within `timeout`. What happens to the operation then depends on what it
//   is (see below); without a timeout the wait is bounded as described there too.
// - test() reports completion without blocking (true once done; rethrows the op's error if it
//   failed). completed() is the same without rethrowing and without driving any progress.
// - A default-constructed Work is already complete. Handles are cheap to copy; all copies
//   observe the same operation. Dropping every handle does not cancel the operation.
//
// Two kinds of operation stand behind a Work (WorkState below):
// - A transport request (isend / irecv, and each message of a collective algorithm): wait()
//   and test() drive communication progress on the calling thread. A wait without a timeout
//   uses BRAID_TIMEOUT; a timeout is fatal, as for every blocking call: it poisons the
//   communicator (the byte streams to the peer are no longer known to be in step).
// - A queued task (the non-blocking collectives, collectives/async_collectives.h): a
//   background thread runs it; wait() sleeps until it is done, or, when the background
//   thread has not started it yet, runs it (and what was queued before it) on the calling
//   thread, as the faster way to the same result. A wait(timeout) that expires
//   leaves the operation running, and a later wait() can still collect it. A wait without a
//   timeout needs none of its own: the task's communication is bounded by BRAID_TIMEOUT per
//   operation, and ops queued behind a failed one fail at once (the communicator is poisoned).
//
// Thread-safety: wait/test/completed may be called from any thread, on any copy.
#pragma once

#include <memory>
#include <optional>

#include "braid/base/clock.h"

namespace braid {

class Fabric;
struct Request;  // transport/request.h (internal)

// What a Work stands for. Implementations: the transport request (work.cc) and the queued
// task (task_work_state.h); issue 5's async engine adds its own the same way.
class WorkState {
 public:
  virtual ~WorkState() = default;
  // See Work. REQUIRES: thread-safe.
  virtual void wait(std::optional<Seconds> timeout) = 0;
  virtual bool test() = 0;
  virtual bool completed() const = 0;
};

class Work {
 public:
  Work() = default;
  // A transport request posted on `fabric`.
  Work(std::shared_ptr<Fabric> fabric, std::shared_ptr<Request> request);
  explicit Work(std::shared_ptr<WorkState> state) : state_(std::move(state)) {}

  // Blocks until done; see the contract above for what bounds it without a timeout.
  void wait(std::optional<Seconds> timeout = std::nullopt);
  bool test();
  // Whether the operation has finished (successfully or not), without progressing anything.
  bool completed() const;

 private:
  std::shared_ptr<WorkState> state_;  // null: already complete
};

}  // namespace braid
