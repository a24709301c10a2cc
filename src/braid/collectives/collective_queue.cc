#include "braid/collectives/collective_queue.h"

#include <utility>

#include "braid/base/start_thread.h"

namespace braid {

namespace {

// Runs one task and completes its Work. The closure is destroyed before the Work completes, so
// that a caller returning from wait() knows the worker holds nothing of its call any more.
void run_task(std::function<void()>& run, TaskWorkState& work) noexcept {
  std::exception_ptr error;
  try {
    run();
  } catch (...) {
    error = std::current_exception();
  }
  run = nullptr;
  work.finish(std::move(error));
}

}  // namespace

CollectiveQueue::~CollectiveQueue() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  task_queued_.notify_all();
  // The worker runs what is still queued before it exits (see run_worker): a task dropped here
  // would leave its Work pending forever and, worse, this rank out of step with its peers.
  if (worker_.joinable()) worker_.join();
}

Work CollectiveQueue::submit(ErrorContext context, std::function<void()> task) {
  const int rank = context.rank;
  auto work = std::make_shared<TaskWorkState>(std::move(context));
  {
    MutexLock lock(mu_);
    // Started first: if the system refuses a thread, submit throws and nothing is queued.
    if (!worker_.joinable()) {
      worker_ = start_thread({.rank = rank, .op = "collective queue"}, [this] { run_worker(); });
    }
    tasks_.push_back({std::move(task), work});
  }
  task_queued_.notify_one();
  return Work(std::move(work));
}

void CollectiveQueue::drain() noexcept {
  MutexLock lock(mu_);
  if (on_worker_locked()) return;
  drained_.wait(mu_, [&]() BRAID_REQUIRES(mu_) { return tasks_.empty() && !running_; });
}

bool CollectiveQueue::busy() const {
  MutexLock lock(mu_);
  return running_ || !tasks_.empty();
}

void CollectiveQueue::run_worker() {
  for (;;) {
    Task task;
    {
      MutexLock lock(mu_);
      task_queued_.wait(mu_, [&]() BRAID_REQUIRES(mu_) { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and every task has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = true;
    }
    run_task(task.run, *task.work);
    MutexLock lock(mu_);
    running_ = false;
    if (tasks_.empty()) drained_.notify_all();
  }
}

}  // namespace braid
