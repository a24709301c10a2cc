// The interface every transport implements (shm, tcp, the in-process loopback; later mpi).
// A transport connects this rank to a fixed set of peers and moves the bytes of posted
// requests; matching is shared (matcher.h), so every backend has the same small shape and
// adding one means adding a folder, not editing the collectives (STYLE.md principle 3).
//
// Progress is driven by the caller (Fabric::wait), never by a hidden thread: progress() never
// blocks, and the caller sleeps in arm_wakeup()/sleep() when nothing moves.
//
// Thread-safety: every method except sleep() is called under the Fabric's lock. sleep() is
// called without it, so that another thread can post and progress meanwhile.
#pragma once

#include <poll.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/transport/request.h"

namespace braid {

// What a sleeping thread waits on, captured under the lock by arm_wakeup(): the value of a
// shared-memory doorbell, and/or the sockets to poll.
struct WakeupArm {
  std::uint64_t doorbell = 0;
  std::vector<pollfd> poll_fds;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;

  // Queue a request; bytes move in later progress() calls. REQUIRES: the request's peer is
  // one of this transport's peers.
  virtual void post_send(const RequestPtr& send) = 0;
  virtual void post_recv(const RequestPtr& recv) = 0;
  // Offers an any-source receive (recv->peer == kAnySource, see matcher.h) to `peer`'s
  // matching: it may match a message already buffered at once (recv->peer then names `peer`).
  // Unlike post_recv, a closed connection to `peer` is not an error: another rank may send it.
  virtual void post_any_source_recv(const RequestPtr& recv, int peer) = 0;

  // Moves whatever can move without blocking; returns whether anything did. Throws the
  // braid::Error that stops this rank (corrupt bytes, a mismatch, an abort from a peer).
  virtual bool progress() = 0;

  // Throws braid::PeerLost if a peer that a pending request involves has gone.
  virtual void check_peers() = 0;
  // Why `peer` (a rank this transport reaches) can no longer communicate — its process exited,
  // its connection closed — or "" while it can. For waits that no request represents.
  virtual std::string lost_reason(int /*peer*/) { return {}; }
  // The envelope of the oldest message from `peer` with `key` that no receive has claimed.
  virtual std::optional<Envelope> unexpected(int /*peer*/, const MatchKey& /*key*/) { return std::nullopt; }

  // Sleeping without lost wake-ups: arm_wakeup() is called before a last progress() pass,
  // sleep() only if that pass moved nothing; it returns when there may be work or after
  // `max_wait`. disarm_wakeup() follows every arm.
  virtual void arm_wakeup(WakeupArm& arm) = 0;
  virtual void sleep(const WakeupArm& arm, Seconds max_wait) = 0;
  virtual void disarm_wakeup() = 0;

  // Tells `peer` (best effort, never throws) that this rank stopped on `error`, so it raises an
  // error too instead of waiting for bytes that will not come.
  virtual void send_abort(int peer, const Error& error) noexcept = 0;

  // Fails every pending request with `error` (the fabric is poisoned).
  virtual void fail_all(const std::exception_ptr& error) noexcept = 0;

  virtual bool has_pending() const = 0;

  // Fault injection (BRAID_FAULT kind=close): breaks the connection to `peer` as a failing
  // network would, and returns true; false where the transport has no connection to break
  // (shared memory, the loopback).
  virtual bool close_for_fault(int /*peer*/) noexcept { return false; }

  // Orderly close at the end of the job: flush, tell peers, release resources.
  virtual void shutdown(Deadline deadline) noexcept = 0;
};

}  // namespace braid
