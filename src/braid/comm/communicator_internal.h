// The half of Communicator meant for collective algorithms (collectives/, compress/, engine/
// and their tests), kept out of the public communicator.h: users see rank, size, point-to-point
// and split; algorithms also need the collective channel, scratch memory, the world's progress
// engine and per-communicator attachments. Not installed (docs/architecture.md, "Public and
// internal headers").
//
//   detail::CollectiveAccess access(comm);
//   std::int64_t seq = access.begin_collective();
//   Work w = access.post_collective_send(buf, envelope, peer);
//   ShmWorkspace& ws = access.attachment<ShmWorkspace>(comm, op, seq);
//
// A CollectiveAccess is a reference to the communicator: every call is inline and costs what
// the same member call did. Thread-safety: that of the Communicator (one thread at a time),
// except attachment() / find_attachment(), which may also be called from the background
// thread running its collectives (collective_queue.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <utility>

#include "braid/base/fnv1a.h"
#include "braid/comm/communicator.h"
#include "braid/comm/scratch_buffer.h"
#include "braid/transport/envelope.h"

namespace braid {

class Fabric;

// State an upper layer keeps with a communicator (the shared-memory workspace of the direct
// algorithms, the sub-communicators of hierarchical ones, the queue of asynchronous
// collectives) without comm/ knowing its type. See CollectiveAccess::attachment().
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
  // True for an attachment whose before_collective does something; begin_collective visits
  // the attachments only if one of them says so (most communicators: none, on every call).
  virtual bool wants_before_collective() const noexcept { return false; }
};

namespace detail {

// FNV-1a of type.name(): equal for the type_info objects of one type (operator== compares the
// names), and computed once per type by find_attachment.
inline std::uint64_t type_name_hash(const std::type_info& type) {
  Fnv1a hash;
  hash.add(std::string_view(type.name()));
  return hash.value();
}

class CollectiveAccess {
 public:
  explicit CollectiveAccess(Communicator& comm) : comm_(comm) {}

  // Starts the next collective: returns its sequence number (equal on every rank). Runs
  // after the collectives still queued in the background (CommAttachment::before_collective).
  std::int64_t begin_collective() {
    if (comm_.runs_before_collective_hooks()) comm_.for_each_attachment(&CommAttachment::before_collective);
    return comm_.next_collective_seq_++;
  }
  // Transfers on the collective channel; the receiver checks the sender's envelope.
  Work post_collective_send(const void* data, const Envelope& envelope, int peer) {
    return comm_.post_collective_send(data, envelope, peer);
  }
  Work post_collective_recv(void* data, const Envelope& envelope, int peer) {
    return comm_.post_collective_recv(data, envelope, peer);
  }
  // Scratch memory for the running collective (reused across calls; see scratch_buffer.h).
  std::byte* scratch(std::size_t bytes) { return comm_.scratch_->get(bytes); }
  // The world's progress engine (liveness checks, poisoning) for algorithms that wait on
  // shared memory instead of messages.
  Fabric& fabric() const;
  // Names this job's shared-memory segments (/dev/shm/braid-<job id>-*, removed by braid-run).
  const std::string& job_id() const;
  // Whether this host runs more of the world's ranks than it has CPUs online: the same answer
  // on every rank of the host (the Fabric's yield_while_spinning follows each rank's own CPU
  // mask and may differ), for what the ranks of a host must agree on.
  bool host_ranks_outnumber_cpus() const;
  // Poisons this process's connections with `error` (every pending operation on every
  // communicator fails with it, every other rank is told) and throws it: for an algorithm that
  // finds a peer's data unusable after it arrived (a corrupt compressed payload). If already
  // poisoned, throws the first error instead.
  [[noreturn]] void fail_world(std::exception_ptr error) const;
  // Payload bytes this process has posted to other ranks, over every communicator, since
  // init (Fabric::bytes_sent): what compressed collectives measure as bytes on the wire.
  std::uint64_t bytes_sent() const;

  // The attachment of type T, created with T(args...) on first use (per communicator; lives
  // as long as it and dies before its connections). T derives from CommAttachment.
  // Attachments may be looked up and created from the thread using the communicator and from
  // a background thread running its collectives (collective_queue.h), hence the lock (lookups
  // of the first few are lock-free: Communicator::indexed_); T is
  // constructed outside it, as its constructor may use the communicator.
  template <class T, class... Args>
  T& attachment(Args&&... args) {
    if (T* found = find_attachment<T>()) return *found;
    auto created = std::make_unique<T>(std::forward<Args>(args)...);
    MutexLock lock(comm_.attachments_mu_);
    for (auto& [type, value] : comm_.attachments_) {
      if (type == std::type_index(typeid(T))) return static_cast<T&>(*value);  // raced: keep the first
    }
    T& ref = *created;
    comm_.add_attachment_locked(typeid(T), std::move(created));
    return ref;
  }
  // The attachment of type T if it exists, else nullptr (creates nothing).
  // Lock-free while the communicator has at most Communicator::kIndexedAttachments.
  template <class T>
  T* find_attachment() const {
    static const std::uint64_t name_hash = type_name_hash(typeid(T));
    bool complete = false;
    if (CommAttachment* found = comm_.find_indexed(typeid(T), name_hash, complete)) return static_cast<T*>(found);
    if (complete) return nullptr;
    MutexLock lock(comm_.attachments_mu_);
    for (auto& [type, value] : comm_.attachments_) {
      if (type == std::type_index(typeid(T))) return static_cast<T*>(value.get());
    }
    return nullptr;
  }

 private:
  Communicator& comm_;
};

}  // namespace detail
}  // namespace braid
