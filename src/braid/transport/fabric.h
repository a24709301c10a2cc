// The Fabric is this process's connection to every rank of the job: one transport per peer
// (shm within the host, tcp across hosts, loopback for itself), shared by the world
// communicator and every communicator split from it. It owns the progress loop: Fabric::wait
// moves bytes on all transports until the awaited request completes, spinning for
// BRAID_SPIN_US and then sleeping on a futex / poll, and checks peers' liveness while asleep.
//
// Failure model (as NCCL's communicator abort): the first error a rank meets poisons the
// Fabric. Every pending request fails with it, every later call rethrows it, and the peer the
// other rank is told (an abort frame or mailbox), so it raises an error too instead of hanging.
//
// Thread-safety: all methods may be called from any thread. One mutex serialises transport
// access; sleeping happens outside it.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "braid/base/clock.h"
#include "braid/base/fault_injector.h"
#include "braid/base/mutex.h"
#include "braid/transport/request.h"
#include "braid/transport/transport.h"

namespace braid {

struct FabricOptions {
  double spin_seconds = 50e-6;       // BRAID_SPIN_US
  bool yield_while_spinning = false; // set when this host's ranks outnumber its cores
  double shutdown_seconds = 30.0;    // bound on the orderly close at the end of the job
  std::optional<FaultSpec> fault;    // BRAID_FAULT (fault_injector.h); acts only on its rank
};

class Fabric {
 public:
  // `route[r]` is the index in `transports` that reaches rank r (any value for r == rank:
  // messages to self use the loopback transport).
  Fabric(int rank, int world_size, std::vector<std::unique_ptr<Transport>> transports, std::vector<int> route,
         FabricOptions options);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // "shm", "tcp" or "self": how this rank reaches `peer`.
  std::string_view transport_name(int peer) const;

  // Starts a transfer. REQUIRES: request->peer in [0, world_size). Throws if poisoned.
  void post(const RequestPtr& request);
  // Starts an any-source receive (request->peer == kAnySource): it takes the first message
  // with its key that any rank of `senders` (world ranks, this one allowed) sends, in each
  // sender's order among the receives posted for it (matcher.h); then request->peer is the
  // sender. It fails with PeerLost only once every one of `senders` but this rank has gone, not when one has.
  void post_any_source(const RequestPtr& request, std::span<const int> senders);
  // Drives progress until `request` completes; rethrows its error. Throws Timeout at `deadline`.
  void wait(const RequestPtr& request, Deadline deadline);
  // One progress pass; true if `request` has completed (rethrows its error if it failed).
  bool test(const RequestPtr& request);

  // For waits outside the transports (collectives that synchronise through shared memory):
  // one progress pass and a liveness check of every peer; rethrows the poison, or poisons the
  // fabric with what it finds (a lost peer, an abort from another rank) and throws that.
  // `awaited` (world ranks) are the peers the caller waits for: any of them that is gone
  // raises PeerLost with `context` (its peer set to the lost rank). Returns the rank and
  // envelope of a message with `quiet` that one of them sent and nobody has received, if any:
  // a caller that expects none there learns that the peer runs another operation.
  struct Unexpected {
    int peer;
    Envelope envelope;
  };
  std::optional<Unexpected> check_health(std::span<const int> awaited, const ErrorContext& context,
                                         const MatchKey& quiet);
  // Poisons the fabric with `error` (telling every peer) and throws it; if already poisoned,
  // throws the first error instead.
  [[noreturn]] void fail(std::exception_ptr error);
  // Rethrows the first error if the fabric is poisoned (waits that never touch a transport
  // must still refuse to run on a failed communicator).
  void throw_if_poisoned();
  const FabricOptions& options() const { return options_; }
  // Payload bytes this process has posted for sending to other ranks (messages to itself
  // excluded), over every transport, since the fabric started: the figure compressed
  // collectives report as bytes on the wire. Shared-memory direct algorithms move data
  // without messages and are not counted.
  std::uint64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }

  // A call of `op` starts on this rank (the collectives' entry points, point-to-point sends):
  // where BRAID_FAULT aims at it, fires the fault (fault_injector.h) and arms a flip or close
  // for the next frame posted to another rank. One inline test of a const bool otherwise.
  void fault_point(OpKind op) {
    if (injector_.enabled()) [[unlikely]] fire_fault(op);
  }

  // Orderly close (idempotent). Called by the destructor when the fabric is not poisoned.
  void shutdown() noexcept;

 private:
  Transport& route(int peer) BRAID_REQUIRES(mu_);  // every transport call but sleep() is made under mu_
  bool progress_locked() BRAID_REQUIRES(mu_);
  void check_peers_locked() BRAID_REQUIRES(mu_);
  // PeerLost for an any-source receive that every sender it was offered to has left waiting.
  void check_any_source_locked() BRAID_REQUIRES(mu_);
  void sleep_until_activity(const RequestPtr& request, Seconds max_wait);
  [[noreturn]] void poison_and_throw_locked(std::exception_ptr error) BRAID_REQUIRES(mu_);
  void notify_peers_locked(const Error& error) BRAID_REQUIRES(mu_);
  [[noreturn]] void throw_timeout(const Request& request, double waited_seconds);
  static void rethrow_if_failed(const Request& request);
  void fire_fault(OpKind op);
  void apply_armed_fault_locked(Request& send) BRAID_REQUIRES(mu_);

  const int rank_;
  const int world_size_;
  const FabricOptions options_;
  std::vector<std::unique_ptr<Transport>> transports_;  // shm / tcp
  std::unique_ptr<Transport> self_;
  std::vector<int> route_;

  Mutex mu_;
  std::exception_ptr poison_ BRAID_GUARDED_BY(mu_);
  // Set (release) once poison_ is: throw_if_poisoned, on every shared-memory collective's fast
  // path, reads it without taking mu_.
  std::atomic<bool> poisoned_{false};
  bool shut_down_ BRAID_GUARDED_BY(mu_) = false;
  FaultInjector injector_;
  ArmedFault armed_fault_ BRAID_GUARDED_BY(mu_) = ArmedFault::kNone;
  struct AnySourceRecv {
    RequestPtr request;
    std::vector<int> senders;
  };
  std::vector<AnySourceRecv> any_source_ BRAID_GUARDED_BY(mu_);  // posted, maybe completed since
  std::atomic<std::uint64_t> bytes_sent_{0};  // relaxed: a statistic, ordered by nothing
};

}  // namespace braid
