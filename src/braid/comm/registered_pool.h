// The pool behind alloc_registered (registered_buffer.h): blocks carved from memfd arenas
// (transport/shm/memfd_arena.h), which the ranks of the host map from each other in place.
//
// Sizes round up to a power of two from 64 bytes to 4 KiB, to a multiple of 4 KiB above, so a
// block's alignment is its rounding unit (arenas start page aligned). A freed block goes to a
// free list by size; alloc takes the smallest free block that fits and is at most twice the
// size, else carves from the newest arena, else creates an arena of max(kArenaBytes, size).
// Arenas live as long as the pool: peers may have mapped them, and ids are never reused, so a
// peer's cached mapping of (rank, arena) stays right however the blocks in it are reused.
//
// Thread-safety: thread-safe (one mutex; alloc and free are not on a collective's path).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "braid/base/mutex.h"
#include "braid/comm/registered_buffer.h"
#include "braid/transport/shm/memfd_arena.h"

namespace braid {

class RegisteredPool : public std::enable_shared_from_this<RegisteredPool> {
 public:
  static constexpr std::size_t kArenaBytes = 4 << 20;  // larger requests get an arena of their own
  static constexpr std::size_t kMinBlock = 64;
  static constexpr std::size_t kPageBlock = 4096;

  // `rank` names errors; `huge` whether arenas try MFD_HUGETLB first.
  RegisteredPool(int rank, shm::HugePages huge, std::size_t arena_bytes = kArenaBytes)
      : rank_(rank), huge_(huge), arena_bytes_(arena_bytes) {}

  // A block of at least `bytes` (bytes > 0). Throws SystemError if no arena can be created.
  RegisteredBuffer alloc(std::size_t bytes);
  // Called by RegisteredBuffer::reset: `data` (a block of `block` bytes) is free again.
  void free(std::byte* data, std::size_t block);

  // The rounded size alloc gives a request of `bytes`.
  static std::size_t block_size(std::size_t bytes);
  // For tests and docs: arenas created so far, and whether each got MFD_HUGETLB pages.
  std::size_t arenas() const;
  bool huge_pages(std::size_t arena) const;

 private:
  std::byte* carve(std::size_t block) BRAID_REQUIRES(mu_);

  const int rank_;
  const shm::HugePages huge_;
  const std::size_t arena_bytes_;
  mutable Mutex mu_;
  std::vector<shm::Arena> arenas_ BRAID_GUARDED_BY(mu_);
  std::size_t used_ BRAID_GUARDED_BY(mu_) = 0;  // bytes carved from the newest arena
  std::multimap<std::size_t, std::byte*> free_ BRAID_GUARDED_BY(mu_);  // block size -> block
};

}  // namespace braid
