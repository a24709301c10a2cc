#include "braid/collectives/collective_queue.h"

#include <deque>
#include <utility>

#include "braid/base/start_thread.h"
#include "braid/comm/task_work_state.h"

namespace braid {

namespace {

struct Task {
  std::function<void()> run;
  std::shared_ptr<TaskWorkState> work;
};

// Runs one task and completes its Work. The closure is destroyed before the Work completes, so
// that a caller returning from wait() knows the queue holds nothing of its call any more.
void run_task(Task& task) noexcept {
  std::exception_ptr error;
  try {
    task.run();
  } catch (...) {
    error = std::current_exception();
  }
  task.run = nullptr;
  task.work->finish(std::move(error));
}

}  // namespace

// The queued tasks and the one running. A task runs on the thread that takes it (take_locked),
// the worker or a waiter (Note [The waiter runs its task]); one at a time, oldest first.
class CollectiveQueue::Tasks {
 public:
  void push(Task task) {
    {
      MutexLock lock(mu_);
      queued_.push_back(std::move(task));
    }
    changed_.notify_one();
  }

  // The worker's loop: runs tasks as they come until stop() and the queue is empty.
  void serve() {
    for (;;) {
      Task task;
      {
        MutexLock lock(mu_);
        changed_.wait(mu_, [&]() BRAID_REQUIRES(mu_) { return !running_ && (stopping_ || !queued_.empty()); });
        if (queued_.empty()) return;  // stopping, and every task has run
        task = take_locked();
      }
      run_task(task);
      MutexLock lock(mu_);
      release_locked();
    }
  }

  // A waiter's help: runs the tasks queued up to and including `target` on this thread, unless
  // a task is running (the worker, or another waiter, has the queue: wait for it as usual) or
  // `target` is not queued any more (started or done).
  void run_here_until(const TaskWorkState* target) {
    for (;;) {
      Task task;
      {
        MutexLock lock(mu_);
        if (running_ || !queued_locked(target)) return;
        task = take_locked();
      }
      const bool reached = task.work.get() == target;
      run_task(task);
      bool worker_has_work = false;
      {
        MutexLock lock(mu_);
        release_locked();
        worker_has_work = stopping_ || !queued_.empty();
      }
      // The worker sleeps while a waiter runs: wake it for what is left (or to stop), and only
      // then: a wake-up for nothing is the thread switch this path exists to avoid.
      if (worker_has_work) changed_.notify_one();
      if (reached) return;
    }
  }

  void stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
  }

  void drain() {
    MutexLock lock(mu_);
    if (running_ && runner_ == std::this_thread::get_id()) return;  // from inside a task
    drained_.wait(mu_, [&]() BRAID_REQUIRES(mu_) { return queued_.empty() && !running_; });
  }

  bool busy() const {
    MutexLock lock(mu_);
    return running_ || !queued_.empty();
  }

 private:
  Task take_locked() BRAID_REQUIRES(mu_) {
    Task task = std::move(queued_.front());
    queued_.pop_front();
    running_ = true;
    runner_ = std::this_thread::get_id();
    return task;
  }

  void release_locked() BRAID_REQUIRES(mu_) {
    running_ = false;
    if (queued_.empty()) drained_.notify_all();
  }

  bool queued_locked(const TaskWorkState* target) const BRAID_REQUIRES(mu_) {
    for (const Task& t : queued_) {
      if (t.work.get() == target) return true;
    }
    return false;
  }

  mutable Mutex mu_;
  CondVar changed_;  // a task was queued, a waiter finished running one, or stopping_ was set
  CondVar drained_;  // queued_ emptied with no task running
  std::deque<Task> queued_ BRAID_GUARDED_BY(mu_);  // not yet started, oldest first
  bool running_ BRAID_GUARDED_BY(mu_) = false;      // a task is running now ...
  std::thread::id runner_ BRAID_GUARDED_BY(mu_);    // ... on this thread
  bool stopping_ BRAID_GUARDED_BY(mu_) = false;     // the queue's destructor has begun
};

CollectiveQueue::CollectiveQueue() : tasks_(std::make_shared<Tasks>()) {}

CollectiveQueue::~CollectiveQueue() {
  tasks_->stop();
  // The worker runs what is still queued before it exits (Tasks::serve): a task dropped here
  // would leave its Work pending forever and, worse, this rank out of step with its peers. A
  // waiter running a task keeps `tasks_` alive through its own reference (submit's helper).
  MutexLock lock(start_mu_);
  if (worker_.joinable()) worker_.join();
}

Work CollectiveQueue::submit(ErrorContext context, std::function<void()> task) {
  const int rank = context.rank;
  {
    MutexLock lock(start_mu_);
    // Started first: if the system refuses a thread, submit throws and nothing is queued.
    if (!worker_.joinable()) {
      worker_ = start_thread({.rank = rank, .op = "collective queue"}, [tasks = tasks_] { tasks->serve(); });
    }
  }
  // The helper holds the tasks weakly: a Work kept after its communicator is gone must not
  // keep the queue's state, and finds nothing to run anyway (the destructor ran everything).
  auto work = std::make_shared<TaskWorkState>(std::move(context));
  work->run_here_before_waiting([weak = std::weak_ptr<Tasks>(tasks_), target = work.get()] {
    if (std::shared_ptr<Tasks> tasks = weak.lock()) tasks->run_here_until(target);
  });
  tasks_->push({std::move(task), work});
  return Work(std::move(work));
}

void CollectiveQueue::drain() noexcept { tasks_->drain(); }

bool CollectiveQueue::busy() const { return tasks_->busy(); }

}  // namespace braid
