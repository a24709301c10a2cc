// Memory that other processes on the host can map without a name: a memfd segment
// (memfd_create) mapped MAP_SHARED by its owner, and mapped by a peer through
// /proc/<owner pid>/fd/<fd>. Nothing appears in /dev/shm, and the memory dies with the last
// process that maps it (the owner's fd, then every mapping). The registered-memory pool
// (comm/registered_pool.h) carves user buffers from these; the zero-copy collectives map a
// peer's arena the first time a call names it (collectives/registered_peers.h).
//
// Huge pages: create() first asks for MFD_HUGETLB (2 MiB pages from the reserved pool,
// /proc/sys/vm/nr_hugepages); where the kernel has none to give, the mapping fails and the
// arena falls back to ordinary shmem pages with MADV_HUGEPAGE (transparent huge pages where
// shmem_enabled allows). Either way the pages are faulted in at creation (MAP_POPULATE), so a
// first large collective does not pay for page faults.
//
// Every arena of the process is listed in a registry (ArenaRegistry), so that a collective can
// tell whether a pointer lies in one and where. Ids are never reused within a process.
//
// Thread-safety: an Arena is immutable once created; ArenaRegistry is thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "braid/base/unique_fd.h"

namespace braid::shm {

enum class HugePages { kTry, kNever };

// Where a pointer lies in an arena of this process.
struct ArenaRef {
  std::uint32_t arena = 0;  // id; 0 = not in an arena
  std::int32_t fd = -1;     // the owner's descriptor of the memfd
  std::uint64_t offset = 0;
};

class Arena {
 public:
  // A new arena of at least `bytes` (rounded up to its page size), zero-filled and faulted
  // in, listed in the registry until destroyed. Throws SystemError naming `rank`.
  static Arena create(std::size_t bytes, HugePages huge, int rank);

  Arena() = default;
  ~Arena();
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::uint32_t id() const { return id_; }
  int fd() const { return fd_.get(); }
  bool huge_pages() const { return huge_; }  // MFD_HUGETLB pages (not THP)

 private:
  void release();

  UniqueFd fd_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::uint32_t id_ = 0;
  bool huge_ = false;
};

// A peer's arena mapped into this process (RAII: unmapped on destruction).
class PeerArena {
 public:
  // Maps arena `ref.fd` of process `pid` whole, MAP_SHARED. Throws SystemError naming `rank`
  // and `peer` where the kernel refuses (another user's process, a ptrace-restricting LSM,
  // a process that has gone).
  static PeerArena map(pid_t pid, const ArenaRef& ref, int rank, int peer);

  PeerArena() = default;
  ~PeerArena();
  PeerArena(PeerArena&& other) noexcept;
  PeerArena& operator=(PeerArena&& other) noexcept;
  PeerArena(const PeerArena&) = delete;
  PeerArena& operator=(const PeerArena&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// The arenas of this process, by address.
class ArenaRegistry {
 public:
  // Where [p, p + bytes) lies, if wholly inside one arena of this process.
  static std::optional<ArenaRef> find(const void* p, std::size_t bytes);
};

}  // namespace braid::shm
