#include "braid/comm/registered_pool.h"

#include <bit>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

namespace {

// The communicator's pool, created by its first alloc_registered; buffers share it, so it
// outlives the communicator while any is alive.
class RegisteredPoolAttachment : public CommAttachment {
 public:
  explicit RegisteredPoolAttachment(const Communicator& comm)
      : pool_(std::make_shared<RegisteredPool>(comm.world_rank(comm.rank()), shm::HugePages::kTry)) {}
  const std::shared_ptr<RegisteredPool>& pool() const { return pool_; }

 private:
  std::shared_ptr<RegisteredPool> pool_;
};

}  // namespace

RegisteredBuffer alloc_registered(Communicator& comm, std::size_t bytes) {
  if (bytes == 0) return {};
  return detail::CollectiveAccess(comm).attachment<RegisteredPoolAttachment>(comm).pool()->alloc(bytes);
}

void register_memory(const Communicator& comm, const void* data, std::size_t bytes) {
  if (bytes == 0 || shm::ArenaRegistry::find(data, bytes)) return;
  throw InvalidArgument({.rank = comm.world_rank(comm.rank()), .op = "register_memory"},
                        fmt::format("[{}, +{} bytes) is not registered memory: on Linux only memory from "
                                    "alloc_registered can be mapped by the peers (private memory such as malloc, "
                                    "the stack or an anonymous mmap cannot be shared with another process); "
                                    "collectives on it take the staged path",
                                    data, bytes));
}

void RegisteredBuffer::reset() {
  if (data_ == nullptr) return;
  pool_->free(std::exchange(data_, nullptr), std::exchange(block_, 0));
  size_ = 0;
  pool_.reset();
}

std::size_t RegisteredPool::block_size(std::size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes <= kPageBlock) return std::bit_ceil(bytes);
  return (bytes + kPageBlock - 1) / kPageBlock * kPageBlock;
}

RegisteredBuffer RegisteredPool::alloc(std::size_t bytes) {
  const std::size_t block = block_size(bytes);
  MutexLock lock(mu_);
  std::byte* data = nullptr;
  std::size_t given = block;
  if (auto it = free_.lower_bound(block); it != free_.end() && it->first <= 2 * block) {
    given = it->first;
    data = it->second;
    free_.erase(it);
  } else {
    data = carve(block);
  }
  return RegisteredBuffer(shared_from_this(), data, bytes, given);
}

std::byte* RegisteredPool::carve(std::size_t block) {
  // Blocks of a page or more start on a page; smaller ones on their own size (a power of two).
  const std::size_t align = block >= kPageBlock ? kPageBlock : block;
  if (!arenas_.empty()) {
    const std::size_t at = (used_ + align - 1) / align * align;
    if (at + block <= arenas_.back().size()) {
      used_ = at + block;
      return arenas_.back().data() + at;
    }
  }
  arenas_.push_back(shm::Arena::create(std::max(arena_bytes_, block), huge_, rank_));
  used_ = block;
  return arenas_.back().data();
}

void RegisteredPool::free(std::byte* data, std::size_t block) {
  MutexLock lock(mu_);
  free_.emplace(block, data);
}

std::size_t RegisteredPool::arenas() const {
  MutexLock lock(mu_);
  return arenas_.size();
}

bool RegisteredPool::huge_pages(std::size_t arena) const {
  MutexLock lock(mu_);
  return arenas_.at(arena).huge_pages();
}

}  // namespace braid
