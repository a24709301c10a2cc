// The shared-memory workspace of the direct intra-host algorithms (allreduce_shm_direct.cc):
// every rank of a communicator whose ranks all share one host maps one segment per rank, and
// each rank reads its peers' segments directly ("shared memory is used as memory, not as a
// pipe", DESIGN.md). A rank's segment holds
//
//   [ header: progress counters, doorbell ][ 2 call slots ][ staging: n slices ][ result ]
//
// A call slot holds a call's signature, the word that says it is posted and an input of up to
// kInlineBytes in its first cache line, the registrations in its second, then up to kFastBytes
// of input (the one-step paths: small messages, allreduce one_shot and two_shot), then
// kFastBytes where two_shot leaves the block each rank reduced.
//
// Synchronisation is by monotonic per-rank counters (never reset, equal on every rank between
// collectives, so stale values from an earlier call can never satisfy a wait): a rank
// publishes "I have done phase p of round g" by storing a larger value, and waits until every
// peer's counter reaches a target. The counters of the sliced rounds are in the header; a
// call's "posted" counter is in its slot, beside the signature and a small input, so that a
// waiting peer fetches all three in one cache-line transfer (an 8-byte allreduce on 2 ranks:
// 0.36 us against 0.48 with the counter in the header; docs/performance.md).
//
// Waiting polls with pauses until BRAID_SPIN_US has passed, or, when ranks outnumber cores,
// yields at every poll (so a peer that needs this core runs at once; the clock is read at
// every poll, so the spin ends on time however long a yield takes), then sleeps on its own futex doorbell, which a publisher rings
// only when the waiter says it sleeps (the fenced Dekker handshake of the shm transport). A
// sleeping waiter wakes every 50 ms to check its peers' liveness and the deadline through the
// Fabric, so a dead or diverged peer raises PeerLost / Timeout instead of a hang.
//
// Created on first use (collective over the communicator) and kept as a Communicator
// attachment. Set-up is two message exchanges: "my segment exists" (with its geometry), then
// "I have mapped every segment"; every name is unlinked after the second, or when set-up
// fails (shm/segment_names.h), so a healthy job holds no name in /dev/shm after its first
// shared-memory collective, and a failed one leaves none behind.
//
// Thread-safety: used by the one thread running the communicator's collectives.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "braid/base/clock.h"
#include "braid/collectives/collective_args.h"
#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"
#include "braid/transport/envelope.h"
#include "braid/transport/fabric.h"
#include "braid/transport/shm/shm_segment.h"

namespace braid {

// Which progress counter of a rank's header.
// What a rank posts at the start of a shared-memory collective, so that its peers can check
// that every rank runs the same call before they read each other's data.
struct ShmCallSignature {
  std::int64_t seq;
  std::int64_t count;
  std::uint8_t op;
  std::uint8_t dtype;
  std::uint8_t reduce_op;
  std::int32_t root;
  friend bool operator==(const ShmCallSignature&, const ShmCallSignature&) = default;
};

// Where a call's send or recv lies in registered memory (comm/registered_buffer.h), posted
// behind the signature (not compared: ranks may differ in what they registered). arena 0:
// not registered. A peer maps the arena through /proc/<pid>/fd/<fd> (registered_peers.h).
// Unregistered, `offset` is the buffer's address in its owner's process, which the
// single-copy paths read with process_vm_readv (transport/shm/cross_memory.h).
struct ShmRegistration {
  std::uint32_t arena = 0;
  std::int32_t fd = -1;
  std::uint64_t offset = 0;
};
struct ShmRegistrations {
  ShmRegistration send, recv;
};
static_assert(sizeof(ShmCallSignature) <= 32 && sizeof(ShmRegistrations) <= 32);
// Whether a rank's posted send and recv (of send_bytes and recv_bytes) overlap: both in one
// registered arena, or both unregistered at addresses of the owner's process.
inline bool send_overlaps_recv(const ShmRegistrations& posted, std::size_t send_bytes, std::size_t recv_bytes) {
  if (posted.send.arena != posted.recv.arena) return false;
  return posted.send.offset < posted.recv.offset + recv_bytes && posted.recv.offset < posted.send.offset + send_bytes;
}

// kStaged/kReduced count rounds of the sliced path; kPosted counts calls (both paths);
// kGathered counts calls too: two_shot's "my reduced block is in my slot".
enum class ShmPhase : int { kStaged = 0, kReduced = 1, kPosted = 2, kGathered = 3 };

class RegisteredPeers;

class ShmWorkspace : public CommAttachment {
 public:
  // Bytes of one slice (the per-rank share of one round; BRAID_SHM_SLICE_BYTES, 128 KiB). A round moves
  // n slices through the workspace: small enough that staging + result of every rank stay in
  // the caches (L2/L3) between being written and read, large enough that the two
  // synchronisations per round are cheap next to the copies. Measured on the 2-core VM
  // (AMD EPYC, 2026-11-29, 64 MiB): 4 ranks 2.2-2.3 GB/s busbw with 64-128 KiB slices, 1.4 with 512 KiB,
  // 1.1 with 4 MiB (cache footprint beats fewer context switches); 2 ranks flat from 32 KiB.
  std::size_t slice_bytes() const { return slice_bytes_; }
  // The piece a path without a synchronisation per round (single copy, registered) reduces at
  // once: the slice, at most 128 KiB, so that its n inputs stay in the caches where the slice
  // was made large for fewer rounds (ranks outnumbering CPUs, shm_workspace.cc).
  std::size_t chunk_bytes() const;
  // Every call starts by posting its signature in one of two alternating slots (which the
  // peers compare before touching anything else); small messages post their whole input with
  // it, and every rank reduces all of them itself. A slot's header is two cache lines (see
  // above); an input of up to kInlineBytes lies in the first, a larger one behind them.
  static constexpr std::size_t kSmallBytes = 8 << 10;
  static constexpr std::size_t kInlineBytes = 32;
  static constexpr std::size_t kSlotHeaderBytes = 128;
  // What one round of allreduce one_shot / two_shot moves per rank (their larger messages take
  // several rounds, one call each). 256 KiB: a round of every rank's input stays in L2/L3.
  static constexpr std::size_t kFastBytes = 256 << 10;

  // Collective over `comm` (every rank on this host): creates this rank's segment, maps every
  // peer's and unlinks every name. `op` and `seq` name the collective that triggered it, for
  // errors. Throws (poisoning the fabric) InvalidArgument for a BRAID_SHM_SLICE_BYTES outside
  // its range or beyond what the machine can give, Mismatch when the ranks disagree on it.
  ShmWorkspace(Communicator& comm, OpKind op, std::int64_t seq);
  ~ShmWorkspace() override;

  // The slot of `rank` for call number `call`: signature, then (small path) data.
  std::byte* small_slot(int rank, std::uint64_t call) const;
  // Where a call's input of `bytes` (post_call's small_input) lies in `rank`'s slot: in the
  // signature's cache line up to kInlineBytes, else behind the slot's header. Every rank posts
  // the same bytes (the signatures agree), so every reader finds it where it was written.
  std::byte* posted_input(int rank, std::uint64_t call, std::size_t bytes) const;
  // two_shot's reduced blocks (kFastBytes in all), behind the largest posted input.
  std::byte* reduced_blocks(int rank, std::uint64_t call) const {
    return small_slot(rank, call) + kSlotHeaderBytes + kFastBytes;
  }
  std::byte* staging(int rank) const;  // n slices of slice_bytes()
  std::byte* result(int rank) const;   // one slice

  // Starts a collective: names it in errors; returns the monotonic round number before its
  // first round (equal on every rank at the start of every collective).
  std::uint64_t begin(OpKind op, std::int64_t seq) {
    op_ = op;
    seq_ = seq;
    return round_;
  }
  // Records that the collective ran `rounds` rounds.
  void end(std::uint64_t rounds) { round_ += rounds; }
  // Starts a call: returns its number (1, 2, ...; equal on every rank), which picks its slot.
  std::uint64_t begin_call(OpKind op, std::int64_t seq) {
    op_ = op;
    seq_ = seq;
    return ++calls_;
  }
  // Starts a call: posts its signature (and `small_input`, if not empty) in this rank's slot,
  // waits until every peer has posted, and checks that all signatures agree, so ranks that
  // called with different counts, dtypes, ops or roots raise Mismatch before reading each
  // other's data. (A peer inside a message-based collective is noticed while waiting: its
  // message arrives.) Returns the call number (see small_slot).
  // REQUIRES: small_input.size() <= kFastBytes.
  std::uint64_t post_call(const CollectiveArgs& args, std::span<const std::byte> small_input,
                          const ShmRegistrations& registrations = {});
  // The same with args.bytes(args.count) bytes of `small_input`, or none if it is null.
  std::uint64_t post_call(const CollectiveArgs& args, const std::byte* small_input) {
    return post_call(args, small_input == nullptr ? std::span<const std::byte>()
                                                  : std::span<const std::byte>(small_input, args.bytes(args.count)));
  }
  // The registered path (allreduce_registered.cc): where args.send and args.recv lie in
  // registered memory, if they do; posted by post_call_registered.
  // (send_bytes of send, recv_bytes of recv; an empty or null range is not registered.)
  static ShmRegistrations registrations_of(const CollectiveArgs& args, std::size_t send_bytes, std::size_t recv_bytes);
  std::uint64_t post_call_registered(const CollectiveArgs& args, std::size_t send_bytes, std::size_t recv_bytes) {
    return post_call(args, {}, registrations_of(args, send_bytes, recv_bytes));
  }
  // What rank `rank` posted for call `call` (after post_call: the same on every rank).
  ShmRegistrations posted_registrations(int rank, std::uint64_t call) const;
  // After post_call: whether every rank's send (if `send`) and recv (if `recv`) of call `call`
  // are registered (the same answer on every rank: it reads every rank's slot).
  bool registered_everywhere(std::uint64_t call, bool send = true, bool recv = true) const;
  // Rank `rank`'s send (or recv) of call `call` in this process: `bytes` from its registered
  // address, the peer's arena mapped on first use and cached for the workspace's life.
  // Corrupt when the peer's offset runs past its arena; SystemError when the kernel refuses
  // the mapping (fails the fabric, so every rank raises).
  std::byte* registered_buffer(int rank, std::uint64_t call, bool recv, std::size_t bytes);
  // How many peer arenas this rank has mapped so far (tests: which path ran).
  std::size_t registered_arenas_mapped() const;
  // How many times a peer's registered buffer was reached through its mapping (tests: the
  // zero-copy paths ran).
  std::uint64_t registered_buffer_uses() const { return registered_buffer_uses_; }

  // Whether every rank of the communicator may read every peer's memory with one copy
  // (process_vm_readv; BRAID_CROSS_MEMORY): probed and agreed at set-up, so the same answer
  // on every rank. The single-copy paths (Note [Single-copy collectives]) need it.
  bool single_copy() const { return single_copy_; }
  // Copies `bytes` from offset `at` of rank `rank`'s send (or recv) of call `call` into
  // `local` (one copy): through the mapping of its arena where it registered the buffer
  // (`total`: the buffer's bytes, checked against the arena), else out of its process
  // (process_vm_readv). A failure (the peer's process gone: PeerLost) fails the fabric, so
  // every rank raises. REQUIRES: single_copy().
  void read_posted(int rank, std::uint64_t call, bool recv, std::size_t total, std::size_t at, std::byte* local,
                   std::size_t bytes);
  // The other way: copies `bytes` from `local` to offset `at` of that buffer.
  void write_posted(int rank, std::uint64_t call, bool recv, std::size_t total, std::size_t at,
                    const std::byte* local, std::size_t bytes);
  // How many bytes this rank has read from or written to peers that way (tests: which path ran).
  std::uint64_t single_copy_bytes() const { return single_copy_bytes_; }

  // Mismatch unless `theirs` (rank `peer`'s signature) equals `mine`.
  void check_signature(int peer, const ShmCallSignature& theirs, const ShmCallSignature& mine) const;
  // A deadline of BRAID_TIMEOUT from now (read once, at construction).
  Deadline deadline() const { return Deadline::after(timeout_); }
  // Fails this rank's communication with `error` (every peer is told) and throws it.
  [[noreturn]] void fail(std::exception_ptr error) { fabric_.fail(std::move(error)); }

  // Tells the peers this rank finished `phase` of round `round`.
  void publish(ShmPhase phase, std::uint64_t round);
  // Returns once every peer finished `phase` of round `round`; throws PeerLost / Timeout /
  // any error another rank reported (via the Fabric) instead of waiting forever.
  void wait_for_peers(ShmPhase phase, std::uint64_t round, const Deadline& deadline);
  // The pipelined exchange of allgather and alltoall: `rounds` rounds on two alternating halves
  // (`half_bytes` each) of every rank's staging area. Round k: wait until every peer has read
  // the round that last used this half (k-2), stage(k, offset of the half), publish, wait for
  // every peer's staging, read(k, offset), publish. Ends once every peer has read the last
  // round, so the next collective finds the workspace free. Starts with begin() and ends with
  // end() itself.
  using RoundStep = std::function<void(std::int64_t round, std::size_t half_offset)>;
  void exchange_rounds(std::int64_t rounds, std::size_t half_bytes, const RoundStep& stage, const RoundStep& read);

  // Whether `comm` can use a workspace: more than one rank, all on one host, all over shm.
  static bool usable(const Communicator& comm);

 private:
  struct Header;
  // The body of the constructor: create, exchange, map, exchange again; every name unlinked.
  void set_up(Communicator& comm, OpKind op, std::int64_t seq);
  // Set-up, between the two exchanges: whether this rank may read every peer's memory.
  bool may_read_every_peer() const;
  // read_posted (to_peer false) and write_posted (true).
  void copy_posted(int rank, std::uint64_t call, bool recv, std::size_t total, std::size_t at, std::byte* local,
                   std::size_t bytes, bool to_peer);
  Header* header(int rank) const;
  // The word `rank` advances when it reaches `round` of `phase`: the header's progress, or for
  // kPosted the posted word of the call's slot (in the cache line of its signature).
  std::atomic<std::uint64_t>& progress(int rank, ShmPhase phase, std::uint64_t round) const;
  bool peers_reached(ShmPhase phase, std::uint64_t round) const;
  void sleep_until_published(ShmPhase phase, std::uint64_t round, Seconds max_wait);
  // The spin of wait_for_peers: true once every peer reached `round`, false when the spin ended.
  bool spin_until_reached(ShmPhase phase, std::uint64_t round, Clock::time_point spin_end) const;
  // Errors name world ranks (as the transports' do), also on sub-communicators.
  int world_rank(int rank) const { return world_ranks_[static_cast<std::size_t>(rank)]; }
  ErrorContext context(int peer) const;  // peer: a communicator rank, or -1
  [[noreturn]] void fail_on_stray_message(const Fabric::Unexpected& stray);
  [[noreturn]] void throw_timeout(ShmPhase phase, std::uint64_t round, double waited);

  Fabric& fabric_;  // outlives the communicator's attachments (owned by its World)
  int rank_ = 0;
  int size_ = 0;
  OpKind op_;
  std::int64_t seq_ = 0;
  std::vector<int> world_ranks_;        // of the communicator's ranks, for liveness checks
  std::vector<shm::Segment> segments_;  // indexed by communicator rank; own included
  std::size_t slice_bytes_;
  Seconds timeout_;
  MatchKey quiet_key_;  // this communicator's collective channel: silent while we wait here
  std::uint64_t round_ = 0;
  std::uint64_t calls_ = 0;
  std::unique_ptr<RegisteredPeers> registered_;  // peers' arenas this rank has mapped
  bool single_copy_ = false;
  std::uint64_t single_copy_bytes_ = 0;
  std::uint64_t registered_buffer_uses_ = 0;
};

}  // namespace braid
