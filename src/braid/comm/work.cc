#include "braid/comm/work.h"

#include "braid/transport/fabric.h"

namespace braid {

namespace {

// A transport request: waiting means driving the fabric's progress loop on this thread.
class RequestWorkState final : public WorkState {
 public:
  RequestWorkState(std::shared_ptr<Fabric> fabric, RequestPtr request)
      : fabric_(std::move(fabric)), request_(std::move(request)) {}

  void wait(std::optional<Seconds> timeout) override {
    fabric_->wait(request_, timeout ? Deadline::after(*timeout) : Deadline::from_env());
  }
  bool test() override { return fabric_->test(request_); }
  bool completed() const override { return request_->complete.load(std::memory_order_acquire); }

 private:
  std::shared_ptr<Fabric> fabric_;
  RequestPtr request_;
};

}  // namespace

Work::Work(std::shared_ptr<Fabric> fabric, RequestPtr request)
    : state_(std::make_shared<RequestWorkState>(std::move(fabric), std::move(request))) {}

void Work::wait(std::optional<Seconds> timeout) {
  if (state_) state_->wait(timeout);
}

bool Work::test() { return !state_ || state_->test(); }

bool Work::completed() const { return !state_ || state_->completed(); }

}  // namespace braid
