// The WorkState of an operation that another thread runs (a queued task): the thread that
// runs it calls finish() once, with the operation's exception or none, and every Work
// holding this state observes that. See work.h for the contract users see.
//
//   auto state = std::make_shared<TaskWorkState>(ErrorContext{.rank = 0, .op = "allreduce"});
//   Work work(state);                   // handed to the caller
//   ...on the running thread: try { run(); state->finish(nullptr); }
//                             catch (...) { state->finish(std::current_exception()); }
//
// Thread-safety: every method may be called from any thread. finish() is called once.
#pragma once

#include <atomic>
#include <exception>
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

  void wait(std::optional<Seconds> timeout) override;
  bool test() override;
  bool completed() const override { return done_.load(std::memory_order_acquire); }

 private:
  // REQUIRES: mu_ held, or done_ seen (error_ is immutable then).
  void rethrow_if_failed() const BRAID_NO_THREAD_SAFETY_ANALYSIS;

  const ErrorContext context_;
  mutable Mutex mu_;
  CondVar finished_;
  std::exception_ptr error_ BRAID_GUARDED_BY(mu_);  // until done_, immutable after
  // Written once (release) under mu_ after error_; read (acquire) without the lock, so that
  // test() and completed() never block behind a waiter.
  std::atomic<bool> done_{false};
};

}  // namespace braid
