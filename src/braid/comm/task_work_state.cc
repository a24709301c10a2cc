#include "braid/comm/task_work_state.h"

#include <chrono>

#include <fmt/format.h>

namespace braid {

void TaskWorkState::finish(std::exception_ptr error) {
  {
    MutexLock lock(mu_);
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
  }
  finished_.notify_all();
}

void TaskWorkState::rethrow_if_failed() const {
  if (error_) std::rethrow_exception(error_);
}

void TaskWorkState::wait(std::optional<Seconds> timeout) {
  if (!timeout && run_here_ && !completed()) run_here_();
  MutexLock lock(mu_);
  auto is_done = [&] { return done_.load(std::memory_order_relaxed); };
  if (!timeout) {
    finished_.wait(mu_, is_done);
  } else if (!finished_.wait_for(mu_, *timeout, is_done)) {
    // Not fatal, unlike a transport timeout: nothing is out of step, the task goes on.
    throw Timeout(context_, fmt::format("not finished after {:.3g} s; the operation keeps running in the "
                                        "background, and a later wait() can still collect it",
                                        timeout->count()));
  }
  rethrow_if_failed();
}

bool TaskWorkState::test() {
  if (!done_.load(std::memory_order_acquire)) return false;
  rethrow_if_failed();  // error_ is immutable once done_ is seen
  return true;
}

}  // namespace braid
