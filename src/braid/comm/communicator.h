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
//
// This header is public (installed): it includes only public headers. What collective
// algorithms need besides (collective sends and receives, scratch memory, the progress engine,
// attachments) is in comm/communicator_internal.h, which is not installed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/base/mutex.h"
#include "braid/comm/topology.h"
#include "braid/comm/work.h"

namespace braid {

class CommAttachment;
class KeyValueStore;
class ScratchBuffer;
struct BufferPiece;
struct Envelope;
struct MatchKey;
struct Request;
struct World;

namespace detail {
class CollectiveAccess;
}

// What Communicator::irecv_any_source returns: the receive, and who sent what it received.
class AnySourceRecv {
 public:
  AnySourceRecv(Work work, std::shared_ptr<const Request> request, std::vector<int> members)
      : work_(std::move(work)), request_(std::move(request)), members_(std::move(members)) {}

  Work& work() { return work_; }
  // The sender's rank in the communicator once the receive has completed successfully; -1
  // before (and after a failure).
  int source() const;

 private:
  Work work_;
  std::shared_ptr<const Request> request_;
  std::vector<int> members_;  // communicator rank -> world rank, to translate the sender
};

class Communicator {
 public:
  // split() with this color leaves the calling rank out (MPI_UNDEFINED).
  static constexpr int kUndefinedColor = -1;

  // Joins the job described by the environment (braid-run, torchrun, Open MPI or Slurm
  // variables; a lone process without any is a world of size 1). Collective over the world.
  static Communicator init();
  // Joins as `rank` of `size` through a store the ranks already share (bootstrap/
  // key_value_store.h: e.g. torch.distributed's, wrapped by the Python backend) instead of the
  // launcher's variables and rank 0's store server. Collective over the world.
  static Communicator init(int rank, int size, std::shared_ptr<KeyValueStore> store);

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
  // A gather send and a scatter receive: one message of the pieces' bytes in order (kU8), moved
  // straight from and into them (sendmsg/recvmsg on TCP, one ring copy per piece on shm), never
  // through a staging copy. The other side may send or receive the same bytes contiguously: the
  // wire does not change. The pieces' memory must stay valid until the Work completes; a
  // receive's pieces must not overlap. Empty pieces are skipped.
  Work isendv(std::span<const std::span<const std::byte>> pieces, int peer, int tag = 0);
  Work irecvv(std::span<const std::span<std::byte>> pieces, int peer, int tag = 0);

  // A receive from whichever rank of this communicator (this one included) sends a message
  // with `tag` first; among one sender's messages and receives the usual order holds. The
  // count and dtype must agree with that message (Mismatch otherwise). PeerLost only once
  // every other rank is gone. MPI_Irecv with MPI_ANY_SOURCE.
  AnySourceRecv irecv_any_source(void* data, std::int64_t count, DType dtype, int tag = 0);

  // Returns once every rank has entered it (dissemination barrier, ceil(log2 n) rounds).
  void barrier();

  // MPI_Comm_split: ranks passing the same color form a new communicator, ordered by (key,
  // rank). Collective over this communicator. kUndefinedColor returns std::nullopt.
  std::optional<Communicator> split(int color, int key);

 private:
  // The half of the interface meant for collective algorithms (comm/communicator_internal.h).
  friend class detail::CollectiveAccess;

  Communicator(std::shared_ptr<World> world, std::vector<int> members, int rank, std::uint64_t id, Topology topology);
  // The communicator of every rank of `world`, returned once every connection works.
  static Communicator world_communicator(std::shared_ptr<World> world);
  std::shared_ptr<Request> make_request(bool is_send, void* data, const MatchKey& key, const Envelope& envelope,
                                        int peer) const;
  Work submit(std::shared_ptr<Request> request);
  Work post(bool is_send, void* data, const MatchKey& key, const Envelope& envelope, int peer) {
    return submit(make_request(is_send, data, key, envelope, peer));
  }
  // isendv / irecvv once their pieces are checked: one kU8 message of `bytes`.
  Work post_pieces(bool is_send, std::vector<BufferPiece> pieces, std::uint64_t bytes, int peer, int tag);
  std::uint64_t checked_bytes(const void* data, std::int64_t count, DType dtype, int peer, int tag, const char* op) const;
  // See detail::CollectiveAccess for these.
  Work post_collective_send(const void* data, const Envelope& envelope, int peer);
  Work post_collective_recv(void* data, const Envelope& envelope, int peer);
  // Calls `hook` on every attachment, those created while it runs included, without holding
  // the lock during the call (a hook may wait for background work that creates attachments).
  void for_each_attachment(void (CommAttachment::*hook)() noexcept);
  using Attachments = std::vector<std::pair<std::type_index, std::unique_ptr<CommAttachment>>>;
  Attachments take_attachments();  // leaves none
  // The i-th attachment (creation order) or nullptr past the last; lock-free for the first
  // kIndexedAttachments (indexed_), the lock beyond.
  CommAttachment* attachment_at(std::size_t i) const;
  // Appends to attachments_ and, while there is room, to the lock-free index.
  void add_attachment_locked(const std::type_info& type, std::unique_ptr<CommAttachment> value)
      BRAID_REQUIRES(attachments_mu_);
  // Writes entry i of the lock-free index (the caller publishes it through indexed_count_).
  void index_attachment_locked(std::size_t i, const std::type_info& type, CommAttachment* value)
      BRAID_REQUIRES(attachments_mu_);
  // The lock-free lookup of find_attachment: the attachment of `type` (whose name hashes to
  // `name_hash`, type_name_hash) among the indexed ones; `complete` says whether the index holds
  // every attachment (else the caller takes the lock).
  CommAttachment* find_indexed(const std::type_info& type, std::uint64_t name_hash, bool& complete) const;
  // Whether some attachment runs work before each collective (CommAttachment::
  // wants_before_collective): if none does, begin_collective visits none.
  bool runs_before_collective_hooks() const { return before_collective_hooks_.load(std::memory_order_acquire); }

  std::shared_ptr<World> world_;
  std::vector<int> members_;  // communicator rank -> world rank
  int rank_ = 0;
  std::uint64_t id_ = 0;
  Topology topology_;
  std::int64_t next_collective_seq_ = 0;
  std::int64_t next_send_seq_ = 0;
  std::unique_ptr<ScratchBuffer> scratch_;  // behind a pointer: its type is internal
  // Last, so that attachments (which may use the communicator) are destroyed first.
  mutable Mutex attachments_mu_;  // not moved: each Communicator object has its own
  Attachments attachments_ BRAID_GUARDED_BY(attachments_mu_);
  // A lock-free mirror of the first attachments, so that a collective's fast path (every call
  // looks up the tuner's configuration and the shared-memory workspace, and begin_collective
  // visits every attachment) takes no mutex. Entries are written under attachments_mu_, value
  // and type before indexed_count_ (release); readers load the count (acquire) first. Cleared
  // only with attachments_ (take_attachments: moves and destruction, when no collective runs).
  static constexpr std::size_t kIndexedAttachments = 8;
  struct IndexedAttachment {
    std::atomic<const std::type_info*> type{nullptr};
    // type_name_hash(*type): a lookup that misses compares integers, not names (type_info's
    // operator== may strcmp them, and the observer's lookup misses on every collective call of
    // a communicator nobody watches).
    std::atomic<std::uint64_t> name_hash{0};
    std::atomic<CommAttachment*> value{nullptr};
  };
  std::array<IndexedAttachment, kIndexedAttachments> indexed_;
  std::atomic<std::size_t> indexed_count_{0};
  std::atomic<bool> before_collective_hooks_{false};
};

}  // namespace braid
