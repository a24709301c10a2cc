// braid::Communicator: a group of ranks that exchange messages and run collectives together.
//
//   braid::Communicator comm = braid::Communicator::init();   // from braid-run / torchrun / ...
//   if (comm.rank() == 0) comm.send(buf.data(), n, braid::DType::kF32, /*peer=*/1);
//   else                  comm.recv(buf.data(), n, braid::DType::kF32, /*peer=*/0);
//   comm.barrier();
//
// Contracts:
//  - Ordering (as MPI and NCCL): every rank of a communicator issues the same collectives
//    (barrier, split, and later allreduce, ...) in the same order. braid checks it: each
//    message carries the op kind, sequence number, dtype and size, and a disagreement raises
//    braid::Mismatch on the ranks involved instead of a hang.
//  - Point-to-point: a receive matches the oldest message from that peer with the same tag;
//    counts and dtypes must agree exactly (braid::Mismatch on both sides otherwise). Sending
//    to oneself is allowed and completes at once.
//  - Errors: see base/error.h. Bad arguments throw InvalidArgument and leave the communicator
//    usable; any other error poisons it (and the communicators split from the same world).
//  - Every blocking call waits at most BRAID_TIMEOUT seconds (300 by default).
//
// Thread-safety: a Communicator may be used by one thread at a time; different communicators
// of one world may be used from different threads concurrently.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <utility>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/base/mutex.h"
#include "braid/comm/scratch_buffer.h"
#include "braid/comm/topology.h"
#include "braid/comm/work.h"
#include "braid/transport/envelope.h"

namespace braid {

class Fabric;
struct World;

// State an upper layer keeps with a communicator (the shared-memory workspace of the direct
// algorithms, the sub-communicators of hierarchical ones, the queue of asynchronous
// collectives) without comm/ knowing its type. See Communicator::attachment().
class CommAttachment {
 public:
  virtual ~CommAttachment() = default;
  // Called before the owning Communicator moves or is destroyed: finish anything that holds
  // its address.
  virtual void quiesce() noexcept {}
  // Called on the thread starting a collective (begin_collective), before it takes its
  // sequence number: an attachment that runs collectives in the background finishes them
  // first, so that sequence numbers follow the order in which the collectives were issued.
  virtual void before_collective() noexcept {}
};

class Communicator {
 public:
  // split() with this color leaves the calling rank out (MPI_UNDEFINED).
  static constexpr int kUndefinedColor = -1;

  // Joins the job described by the environment (braid-run, torchrun, Open MPI or Slurm
  // variables; a lone process without any is a world of size 1). Collective over the world.
  static Communicator init();

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(members_.size()); }
  int local_rank() const { return topology_.local_rank(rank_); }
  int local_size() const { return topology_.local_size(rank_); }
  const Topology& topology() const { return topology_; }
  // Identifies this communicator's traffic on the shared connections (equal on all members).
  std::uint64_t id() const { return id_; }
  // How this rank reaches `peer`: "shm", "tcp" or "self".
  std::string_view transport_to(int peer) const;
  // The rank of communicator rank `rank` in the world communicator.
  int world_rank(int rank) const { return members_[static_cast<std::size_t>(rank)]; }

  // Point-to-point. `count` elements of `dtype`; tags are 0..2^31-1.
  void send(const void* data, std::int64_t count, DType dtype, int peer, int tag = 0);
  void recv(void* data, std::int64_t count, DType dtype, int peer, int tag = 0);
  Work isend(const void* data, std::int64_t count, DType dtype, int peer, int tag = 0);
  Work irecv(void* data, std::int64_t count, DType dtype, int peer, int tag = 0);

  // Returns once every rank has entered it (dissemination barrier, ceil(log2 n) rounds).
  void barrier();

  // MPI_Comm_split: ranks passing the same color form a new communicator, ordered by (key,
  // rank). Collective over this communicator. kUndefinedColor returns std::nullopt.
  std::optional<Communicator> split(int color, int key);

  // --- for collective algorithms (collectives/) ----------------------------------------
  // Starts the next collective: returns its sequence number (equal on every rank). Runs
  // after the collectives still queued in the background (CommAttachment::before_collective).
  std::int64_t begin_collective() {
    for_each_attachment(&CommAttachment::before_collective);
    return next_collective_seq_++;
  }
  // Transfers on the collective channel; the receiver checks the sender's envelope.
  Work post_collective_send(const void* data, const Envelope& envelope, int peer);
  Work post_collective_recv(void* data, const Envelope& envelope, int peer);
  // Scratch memory for the running collective (reused across calls; see scratch_buffer.h).
  std::byte* scratch(std::size_t bytes) { return scratch_.get(bytes); }
  // The world's progress engine (liveness checks, poisoning) for algorithms that wait on
  // shared memory instead of messages.
  Fabric& fabric() const;
  // Poisons this process's connections with `error` (every pending operation on every
  // communicator fails with it, every other rank is told) and throws it: for an algorithm that
  // finds a peer's data unusable after it arrived (a corrupt compressed payload). If already
  // poisoned, throws the first error instead.
  [[noreturn]] void fail_world(std::exception_ptr error) const;
  // Payload bytes this process has posted to other ranks, over every communicator, since
  // init (Fabric::bytes_sent): what compressed collectives measure as bytes on the wire.
  std::uint64_t bytes_sent() const;
  // Names this job's shared-memory segments (/dev/shm/braid-<job id>-*, removed by braid-run).
  const std::string& job_id() const;

  // The attachment of type T, created with T(args...) on first use (per communicator; lives
  // as long as it and dies before its connections). T derives from CommAttachment.
  // Attachments may be looked up and created from the thread using the communicator and from
  // a background thread running its collectives (collective_queue.h), hence the lock; T is
  // constructed outside it, as its constructor may use the communicator.
  template <class T, class... Args>
  T& attachment(Args&&... args) {
    if (T* found = find_attachment<T>()) return *found;
    auto created = std::make_unique<T>(std::forward<Args>(args)...);
    MutexLock lock(attachments_mu_);
    for (auto& [type, value] : attachments_) {
      if (type == std::type_index(typeid(T))) return static_cast<T&>(*value);  // raced: keep the first
    }
    T& ref = *created;
    attachments_.emplace_back(std::type_index(typeid(T)), std::move(created));
    return ref;
  }
  // The attachment of type T if it exists, else nullptr (creates nothing).
  template <class T>
  T* find_attachment() const {
    MutexLock lock(attachments_mu_);
    for (auto& [type, value] : attachments_) {
      if (type == std::type_index(typeid(T))) return static_cast<T*>(value.get());
    }
    return nullptr;
  }

 private:
  Communicator(std::shared_ptr<World> world, std::vector<int> members, int rank, std::uint64_t id, Topology topology);
  Work post(bool is_send, void* data, const MatchKey& key, const Envelope& envelope, int peer);
  std::uint64_t checked_bytes(const void* data, std::int64_t count, DType dtype, int peer, int tag, const char* op) const;
  // Calls `hook` on every attachment, those created while it runs included, without holding
  // the lock during the call (a hook may wait for background work that creates attachments).
  void for_each_attachment(void (CommAttachment::*hook)() noexcept);
  using Attachments = std::vector<std::pair<std::type_index, std::unique_ptr<CommAttachment>>>;
  Attachments take_attachments();  // leaves none

  std::shared_ptr<World> world_;
  std::vector<int> members_;  // communicator rank -> world rank
  int rank_ = 0;
  std::uint64_t id_ = 0;
  Topology topology_;
  std::int64_t next_collective_seq_ = 0;
  std::int64_t next_send_seq_ = 0;
  ScratchBuffer scratch_;
  // Last, so that attachments (which may use the communicator) are destroyed first.
  mutable Mutex attachments_mu_;  // not moved: each Communicator object has its own
  Attachments attachments_ GUARDED_BY(attachments_mu_);
};

}  // namespace braid
