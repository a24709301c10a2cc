// Messages a rank sends to itself: matched and copied at once, so a send to self completes
// when it is posted (an eager copy if the receive is not posted yet) and never deadlocks.
#pragma once

#include "braid/transport/matcher.h"
#include "braid/transport/transport.h"

namespace braid {

class LoopbackTransport final : public Transport {
 public:
  explicit LoopbackTransport(int rank) : matcher_(rank, rank) {}

  std::string_view name() const override { return "self"; }
  void post_send(const RequestPtr& send) override;
  void post_recv(const RequestPtr& recv) override { matcher_.post_recv(recv); }
  void post_any_source_recv(const RequestPtr& recv, int /*peer*/) override { matcher_.post_recv(recv); }
  bool progress() override { return false; }
  void check_peers() override {}
  void arm_wakeup(WakeupArm&) override {}
  void sleep(const WakeupArm&, Seconds) override {}
  void disarm_wakeup() override {}
  void send_abort(int, const Error&) noexcept override {}
  void fail_all(const std::exception_ptr& error) noexcept override { matcher_.fail_all(error); }
  bool has_pending() const override { return matcher_.has_posted_recvs(); }
  void shutdown(Deadline) noexcept override {}

 private:
  Matcher matcher_;
};

}  // namespace braid
