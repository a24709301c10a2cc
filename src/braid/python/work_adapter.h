// c10d::Work for braid's operations. c10d's contract (Work.hpp): wait() blocks until done and
// rethrows the op's exception; getFuture() is a future whose value is the op's output tensors,
// which DDP's reducer chains its callbacks on and never calls wait() for.
//
// QueuedWork: a collective that runs as one task on the communicator's background queue
// (collectives/collective_queue.h). The task calls complete() once, from the worker: it
// finishes the Work and then the future, so the future's callbacks (DDP's bucket copy-back,
// a comm hook's continuation) run on braid's worker, as Gloo runs them on its own thread.
// A wait() without a timeout on an op the worker has not started runs it on the waiting
// thread instead (collective_queue.h, Note [The waiter runs its task]): dist.all_reduce(t)
// without async_op is such a wait, and so pays no thread hand-off.
//
// PointToPointWork: a send or receive, a transport request driven by whoever waits on it
// (braid's caller-driven progress): wait() drives it and completes the future; isCompleted()
// polls it. A receive into a non-contiguous tensor copies back when it completes.
//
// A wait() without a timeout waits for the op, which braid bounds by BRAID_TIMEOUT (the
// group's timeout unless the user set it; braid/torch.py); wait(timeout) throws c10d's
// "Operation timed out!" after `timeout` and leaves the op running.
//
// Thread-safety: every method may be called from any thread (c10d's mutex_ guards the state).
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "braid/comm/work.h"
#include "braid/python/staging.h"

namespace braid::python {

// A future whose value will be a list of tensors (what DDP expects of allreduce's).
c10::intrusive_ptr<c10::ivalue::Future> make_tensor_list_future();

class QueuedWork final : public c10d::Work {
 public:
  QueuedWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  // Called once, where the op ran, when it has finished; `error` may be null.
  void complete(std::exception_ptr error);
  // The queued task that calls complete(). REQUIRES: called once, before the Work is returned.
  void set_task(braid::Work task) { task_ = std::move(task); }

  bool wait(std::chrono::milliseconds timeout) override;

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  braid::Work task_;
};

class PointToPointWork final : public c10d::Work {
 public:
  // `staged` is the tensor braid sends from or receives into (its work() buffer in flight);
  // `source` says who sent what a receive got (known once it has completed, for an
  // any-source receive), -1 for a send.
  PointToPointWork(int rank, c10d::OpType type, braid::Work transfer, Staged staged, std::function<int()> source);

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  int sourceRank() const override { return source_(); }
  std::vector<at::Tensor> result() override { return {staged_.work()}; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  // Records the outcome once (the first caller to see it), then completes the future.
  void settle(std::exception_ptr error);

  std::once_flag settled_;
  braid::Work transfer_;
  Staged staged_;
  std::function<int()> source_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace braid::python
