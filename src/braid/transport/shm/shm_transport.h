// Point-to-point transport between ranks on one host, through shared memory.
//
// Each rank owns one segment (shm_layout.h) with an inbound ring per local peer, a doorbell
// futex word and an abort mailbox. A send streams header + payload into the ring that lives
// in the *receiver's* segment, publishing every chunk (BRAID_SHM_CHUNK_BYTES) so that the
// receiver copies chunk k out while the sender copies chunk k+1 in: two cores work on one
// message at once. Anyone who gives a rank news (data written, ring space freed, an abort)
// rings that rank's doorbell; a rank that has spun BRAID_SPIN_US without progress sleeps on
// its own doorbell, so 4 ranks on 2 cores share the CPUs instead of burning them.
//
// Set-up agrees on the geometry (and checks it against the machine's budget, shm_budget.h)
// before any segment exists, and every name is unlinked as soon as every local peer has mapped
// it, or when set-up fails (segment_names.h), so nothing is left in /dev/shm whatever started
// the processes and however the job ends.
//
// Thread-safety: see transport.h (everything but sleep() under the Fabric's lock).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "braid/transport/matcher.h"
#include "braid/transport/peer_process.h"
#include "braid/transport/shm/shm_ring.h"
#include "braid/transport/shm/shm_segment.h"
#include "braid/transport/transport.h"

namespace braid {
class KeyValueStore;
}

namespace braid::shm {

struct ShmOptions {
  int rank = 0;                 // this process's global rank
  std::vector<int> local_ranks; // global ranks on this host, ascending, including `rank`
  std::string job_id;           // names the segments: /braid-<job_id>-<rank>
  std::size_t ring_bytes = 512 << 10;  // REQUIRES: a power of two >= 4096 (BRAID_SHM_RING_BYTES)
  std::size_t chunk_bytes = 32 << 10;  // REQUIRES: <= ring_bytes / 2
};

// The segment name of `rank` in job `job_id`.
std::string segment_name(const std::string& job_id, int rank);

class ShmTransport final : public Transport {
 public:
  // Collective over options.local_ranks (through `store`): agree on the geometry, create,
  // exchange, map, unlink. Throws InvalidArgument (a rank's settings, or more shared memory
  // than the machine can give), Mismatch (ranks disagree), Timeout, PeerLost.
  static std::unique_ptr<ShmTransport> connect(const ShmOptions& options, KeyValueStore& store, Deadline deadline);
  ~ShmTransport() override;

  std::string_view name() const override { return "shm"; }
  void post_send(const RequestPtr& send) override;
  void post_recv(const RequestPtr& recv) override;
  void post_any_source_recv(const RequestPtr& recv, int peer_rank) override;
  bool progress() override;
  void check_peers() override;
  std::string lost_reason(int peer) override;
  std::optional<Envelope> unexpected(int peer, const MatchKey& key) override;
  void arm_wakeup(WakeupArm& arm) override;
  void sleep(const WakeupArm& arm, Seconds max_wait) override;
  void disarm_wakeup() override;
  void send_abort(int peer, const Error& error) noexcept override;
  void fail_all(const std::exception_ptr& error) noexcept override;
  bool has_pending() const override;
  void shutdown(Deadline deadline) noexcept override;

 private:
  struct Peer;
  explicit ShmTransport(const ShmOptions& options);

  // Set-up steps of connect(): this rank's segment, then each peer's mapped and wired.
  void create_own_segment(const std::string& name);
  void map_peer(int rank, const std::string& name);
  Peer& peer(int rank);
  bool progress_sends(Peer& p);
  bool progress_recvs(Peer& p);
  void check_abort_mailbox();
  void ring_doorbell(SegmentHeader* header);
  SegmentHeader* own_header() const;

  ShmOptions options_;
  SegmentLayout layout_;
  Segment own_segment_;
  std::vector<std::unique_ptr<Peer>> peers_;  // local peers, excluding self
  std::vector<int> peer_index_;               // global rank -> index in peers_, or -1
};

}  // namespace braid::shm
