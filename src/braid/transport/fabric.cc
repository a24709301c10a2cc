#include "braid/transport/fabric.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>

#include <fmt/format.h>

#include "braid/base/log.h"
#include "braid/transport/loopback_transport.h"

namespace braid {

namespace {

// How often a sleeping waiter wakes to check that its peers are alive (the 5 s PeerLost bound
// needs far less; 50 ms keeps the cost of the check negligible).
constexpr Seconds kLivenessInterval{0.05};

}  // namespace

Fabric::Fabric(int rank, int world_size, std::vector<std::unique_ptr<Transport>> transports, std::vector<int> route,
               FabricOptions options)
    : rank_(rank),
      world_size_(world_size),
      options_(options),
      transports_(std::move(transports)),
      self_(std::make_unique<LoopbackTransport>(rank)),
      route_(std::move(route)),
      injector_(options_.fault, rank) {}

Fabric::~Fabric() { shutdown(); }

std::string_view Fabric::transport_name(int peer) const {
  if (peer == rank_) return self_->name();
  return transports_[static_cast<std::size_t>(route_[static_cast<std::size_t>(peer)])]->name();
}

Transport& Fabric::route(int peer) {
  if (peer == rank_) return *self_;
  return *transports_[static_cast<std::size_t>(route_[static_cast<std::size_t>(peer)])];
}

void Fabric::post(const RequestPtr& request) {
  MutexLock lock(mu_);
  if (poison_) std::rethrow_exception(poison_);
  try {
    Transport& t = route(request->peer);
    if (request->is_send()) {
      if (armed_fault_ != ArmedFault::kNone && request->peer != rank_) [[unlikely]] apply_armed_fault_locked(*request);
      t.post_send(request);
      if (request->peer != rank_) bytes_sent_.fetch_add(request->envelope.bytes, std::memory_order_relaxed);
    } else {
      t.post_recv(request);
    }
    progress_locked();  // start moving bytes now: the caller may compute before it waits
  } catch (const Error&) {
    poison_and_throw_locked(std::current_exception());
  }
}

void Fabric::fire_fault(OpKind op) {
  ArmedFault armed = injector_.on_call(op);  // kill, freeze and stall happen in there
  if (armed == ArmedFault::kNone) return;
  MutexLock lock(mu_);
  armed_fault_ = armed;
}

// A flip marks the frame (its transport flips a header bit after the CRC: the receiver raises
// Corrupt). A close needs a connection: it waits for a frame to a peer reached over TCP, whose
// socket is then shut down both ways (both ends raise PeerLost); shared memory has none.
void Fabric::apply_armed_fault_locked(Request& send) {
  if (armed_fault_ == ArmedFault::kFlip) {
    send.inject_corrupt_header = true;
    armed_fault_ = ArmedFault::kNone;
  } else if (armed_fault_ == ArmedFault::kClose && route(send.peer).close_for_fault(send.peer)) {
    armed_fault_ = ArmedFault::kNone;
  }
}

void Fabric::post_any_source(const RequestPtr& request, std::span<const int> senders) {
  MutexLock lock(mu_);
  if (poison_) std::rethrow_exception(poison_);
  try {
    for (int sender : senders) {
      route(sender).post_any_source_recv(request, sender);
      if (request->peer != kAnySource) break;  // matched a buffered message: offered to no one else
    }
    std::erase_if(any_source_, [](const AnySourceRecv& r) { return r.request->complete.load(std::memory_order_acquire); });
    if (request->peer == kAnySource) any_source_.push_back({request, std::vector<int>(senders.begin(), senders.end())});
    progress_locked();
  } catch (const Error&) {
    poison_and_throw_locked(std::current_exception());
  }
}

void Fabric::check_any_source_locked() {
  if (any_source_.empty()) return;
  progress_locked();  // what a sender wrote before it exited is still to be read
  for (const AnySourceRecv& recv : any_source_) {
    const Request& r = *recv.request;
    if (r.peer != kAnySource || r.complete.load(std::memory_order_acquire)) continue;
    // This rank counts for nothing: it is waiting here, and another thread sending to itself
    // would have completed the receive at once (loopback).
    std::string reasons;
    int last_lost = -1;
    for (int sender : recv.senders) {
      if (sender == rank_) continue;
      std::string reason = route(sender).lost_reason(sender);
      if (reason.empty()) return;  // someone can still send it
      reasons += (reasons.empty() ? "" : "; ") + reason;
      last_lost = sender;
    }
    if (last_lost < 0) continue;  // no other rank to wait for (a world of one): the timeout bounds it
    throw PeerLost({.rank = rank_, .peer = last_lost, .op = "recv", .seq = r.envelope.seq},
                   fmt::format("every other rank an any-source receive could come from is gone ({})", reasons));
  }
}

bool Fabric::progress_locked() {
  bool moved = false;
  for (auto& t : transports_) moved |= t->progress();
  return moved;
}

void Fabric::check_peers_locked() {
  for (auto& t : transports_) t->check_peers();
}

std::optional<Fabric::Unexpected> Fabric::check_health(std::span<const int> awaited, const ErrorContext& context,
                                                       const MatchKey& quiet) {
  MutexLock lock(mu_);
  if (poison_) std::rethrow_exception(poison_);
  try {
    progress_locked();
    check_peers_locked();
    for (int peer : awaited) {
      if (peer == rank_) continue;
      std::string reason = route(peer).lost_reason(peer);
      if (reason.empty()) continue;
      ErrorContext ctx = context;
      ctx.peer = peer;
      throw PeerLost(ctx, reason + " while this rank waited for it");
    }
  } catch (const Error&) {
    poison_and_throw_locked(std::current_exception());
  }
  for (int peer : awaited) {
    if (peer == rank_) continue;
    if (auto envelope = route(peer).unexpected(peer, quiet)) return Unexpected{peer, *envelope};
  }
  return std::nullopt;
}

void Fabric::throw_if_poisoned() {
  if (!poisoned_.load(std::memory_order_acquire)) return;
  MutexLock lock(mu_);
  if (poison_) std::rethrow_exception(poison_);
}

void Fabric::fail(std::exception_ptr error) {
  MutexLock lock(mu_);
  poison_and_throw_locked(std::move(error));
}

void Fabric::poison_and_throw_locked(std::exception_ptr error) {
  if (!poison_) {
    poison_ = error;
    poisoned_.store(true, std::memory_order_release);
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      log::debug("rank {}: communication stopped: {}", rank_, e.what());
      notify_peers_locked(e);
    } catch (...) {
    }
    for (auto& t : transports_) t->fail_all(error);
    self_->fail_all(error);
  }
  std::rethrow_exception(poison_);
}

// Tells every other rank (best effort) that this one stopped, so that none of them waits for
// a message that will not come: a rank blocked on a third rank that is itself blocked on us
// learns of the failure at once instead of at its timeout. Not the rank that is gone, and not
// the rank that reported the failure to us (it knows).
void Fabric::notify_peers_locked(const Error& error) {
  const bool from_abort = error.context().op == "abort";
  const int lost = error.kind() == ErrorKind::kPeerLost ? error.context().peer : -1;
  for (int peer = 0; peer < world_size_; ++peer) {
    if (peer == rank_ || peer == lost || (from_abort && peer == error.context().peer)) continue;
    route(peer).send_abort(peer, error);
  }
}

void Fabric::rethrow_if_failed(const Request& request) {
  if (request.error) std::rethrow_exception(request.error);
}

bool Fabric::test(const RequestPtr& request) {
  if (!request->complete.load(std::memory_order_acquire)) {
    MutexLock lock(mu_);
    if (poison_) std::rethrow_exception(poison_);
    try {
      progress_locked();
    } catch (const Error&) {
      poison_and_throw_locked(std::current_exception());
    }
  }
  if (!request->complete.load(std::memory_order_acquire)) return false;
  rethrow_if_failed(*request);
  return true;
}

void Fabric::wait(const RequestPtr& request, Deadline deadline) {
  const auto start = Clock::now();
  const auto spin_end = start + std::chrono::duration_cast<Clock::duration>(Seconds(options_.spin_seconds));
  auto next_liveness_check = start + std::chrono::duration_cast<Clock::duration>(kLivenessInterval);
  while (!test(request)) {
    auto now = Clock::now();
    if (now < spin_end) {
      // When ranks outnumber cores, the rank we wait for may be runnable on this very core:
      // yielding lets it run now rather than after our time slice. With a core each, a plain
      // pause loop keeps the latency of a shared-memory round trip (~1 us).
      if (options_.yield_while_spinning) {
        ::sched_yield();
      } else {
        _mm_pause();
      }
      continue;
    }
    if (deadline.expired()) throw_timeout(*request, Seconds(now - start).count());
    sleep_until_activity(request, deadline.remaining(kLivenessInterval));
    if (Clock::now() >= next_liveness_check) {
      MutexLock lock(mu_);
      try {
        check_peers_locked();
        check_any_source_locked();
      } catch (const Error&) {
        poison_and_throw_locked(std::current_exception());
      }
      next_liveness_check = Clock::now() + std::chrono::duration_cast<Clock::duration>(kLivenessInterval);
    }
  }
}

void Fabric::sleep_until_activity(const RequestPtr& request, Seconds max_wait) {
  WakeupArm arm;
  {
    MutexLock lock(mu_);
    for (auto& t : transports_) t->arm_wakeup(arm);
    bool moved = false;
    try {
      moved = progress_locked();
    } catch (const Error&) {
      for (auto& t : transports_) t->disarm_wakeup();
      poison_and_throw_locked(std::current_exception());
    }
    if (moved || request->complete.load(std::memory_order_acquire)) {
      for (auto& t : transports_) t->disarm_wakeup();
      return;
    }
  }
  // With both kinds of transport there is no single thing to sleep on: alternate short sleeps.
  Seconds each = transports_.size() > 1 ? std::min(max_wait, Seconds(0.001)) : max_wait;
  for (auto& t : transports_) t->sleep(arm, each);
  MutexLock lock(mu_);
  for (auto& t : transports_) t->disarm_wakeup();
}

void Fabric::throw_timeout(const Request& request, double waited_seconds) {
  MutexLock lock(mu_);
  ErrorContext ctx{.rank = rank_, .peer = request.peer, .op = std::string(op_kind_name(request.envelope.op)),
                   .seq = request.envelope.seq};
  std::string whom = request.peer == kAnySource ? "any rank" : fmt::format("rank {}", request.peer);
  std::string what = fmt::format(
      "timed out after {:.1f} s waiting to {} {} {} {} ({}/{} bytes moved); the peer may be stuck, or the ranks "
      "called different operations (BRAID_TIMEOUT sets the limit)",
      waited_seconds, request.is_send() ? "send" : "receive", describe(request.envelope),
      request.is_send() ? "to" : "from", whom, request.transferred, request.envelope.bytes);
  poison_and_throw_locked(std::make_exception_ptr(Timeout(ctx, what)));
}

void Fabric::shutdown() noexcept {
  MutexLock lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (poison_) return;  // streams are out of step; peers will see the connections close
  Deadline deadline = Deadline::after(Seconds(options_.shutdown_seconds));
  for (auto& t : transports_) t->shutdown(deadline);
}

}  // namespace braid
