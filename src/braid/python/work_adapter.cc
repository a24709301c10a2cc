#include "braid/python/work_adapter.h"

#include <mutex>
#include <optional>

#include "braid/base/clock.h"

namespace braid::python {

c10::intrusive_ptr<c10::ivalue::Future> make_tensor_list_future() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

QueuedWork::QueuedWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), outputs_(std::move(outputs)), future_(make_tensor_list_future()) {}

void QueuedWork::complete(std::exception_ptr error) {
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

bool QueuedWork::wait(std::chrono::milliseconds timeout) {
  // The task never throws (it hands its error to complete()), so this only runs it here when
  // the worker has not, or waits for it; c10d's wait then rethrows the op's error.
  if (timeout == kNoTimeout) task_.wait();
  return c10d::Work::wait(timeout);
}

PointToPointWork::PointToPointWork(int rank, c10d::OpType type, braid::Work transfer, Staged staged,
                                   std::function<int()> source)
    : c10d::Work(rank, type),
      transfer_(std::move(transfer)),
      staged_(std::move(staged)),
      source_(std::move(source)),
      future_(make_tensor_list_future()) {}

void PointToPointWork::settle(std::exception_ptr error) {
  std::call_once(settled_, [&] {
    if (!error) {
      try {
        staged_.finish();
      } catch (...) {
        error = std::current_exception();
      }
    }
    finish(error);
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(std::vector<at::Tensor>{staged_.work()}));
    }
  });
}

bool PointToPointWork::isCompleted() {
  try {
    if (transfer_.test()) settle(nullptr);
  } catch (...) {
    settle(std::current_exception());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool PointToPointWork::wait(std::chrono::milliseconds timeout) {
  std::optional<Seconds> limit;
  if (timeout != kNoTimeout) limit = Seconds(static_cast<double>(timeout.count()) / 1000.0);
  try {
    transfer_.wait(limit);
    settle(nullptr);
  } catch (...) {
    settle(std::current_exception());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

}  // namespace braid::python
