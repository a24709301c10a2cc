#include "braid/comm/work.h"

#include "braid/transport/fabric.h"

namespace braid {

void Work::wait(std::optional<Seconds> timeout) {
  if (!request_) return;
  fabric_->wait(request_, timeout ? Deadline::after(*timeout) : Deadline::from_env());
}

bool Work::test() { return !request_ || fabric_->test(request_); }

bool Work::completed() const { return !request_ || request_->complete.load(std::memory_order_acquire); }

}  // namespace braid
