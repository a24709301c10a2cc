// The WorkState of an operation that another thread runs (a queued task): the thread that
// runs it calls finish() once, with the operation's exception or none, and every Work
// holding this state observes that. See work.h for the contract users see.
//
//   auto state = std::make_shared<TaskWorkState>(ErrorContext{.rank = 0, .op = "allreduce"});
//   Work work(state);                   // handed to the caller
//   ...on the running thread: try { run(); state->finish(nullptr); }
//                             catch (...) { state->finish(std::current_exception()); }
//
// A wait() without a timeout may first run the operation on the waiting thread, through the
// helper its runner installed (run_here_before_waiting: collective_queue.h, Note [The waiter
// runs its task]); the helper returns at once when the operation has started elsewhere.
//
// Thread-safety: every method may be called from any thread, but run_here_before_waiting()
// only before the state is shared. finish() is called once.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <optional>

#include "braid/base/error.h"
#include "braid/base/mutex.h"
#include "braid/comm/work.h"

namespace braid {

class TaskWorkState final : public WorkState {
 public:
  // `context` names the operation in the Timeout a wait(timeout) may throw.
  explicit TaskWorkState(ErrorContext context) : context_(std::move(context)) {}

  // Marks the operation done; `error` (may be null) is what wait() and test() rethrow.
  void finish(std::exception_ptr error);

  // `run_here` runs the operation on the calling thread if nobody has started it (and
  // returns at once otherwise); wait() without a timeout calls it before it sleeps.
  // REQUIRES: called before any Work holding this state is handed out.
  void run_here_before_waiting(std::function<void()> run_here) { run_here_ = std::move(run_here); }

  void wait(std::optional<Seconds> timeout) override;
  bool test() override;
  bool completed() const override { return done_.load(std::memory_order_acquire); }

 private:
  // REQUIRES: mu_ held, or done_ seen (error_ is immutable then).
  void rethrow_if_failed() const BRAID_NO_THREAD_SAFETY_ANALYSIS;

  const ErrorContext context_;
  std::function<void()> run_here_;  // set before the state is shared, immutable after
  mutable Mutex mu_;
  CondVar finished_;
  std::exception_ptr error_ BRAID_GUARDED_BY(mu_);  // until done_, immutable after
  // Written once (release) under mu_ after error_; read (acquire) without the lock, so that
  // test() and completed() never block behind a waiter.
  std::atomic<bool> done_{false};
};

}  // namespace braid
