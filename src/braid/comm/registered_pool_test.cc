#include "braid/comm/registered_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "braid/transport/shm/memfd_arena.h"

namespace braid {
namespace {

std::uintptr_t address(const RegisteredBuffer& b) { return reinterpret_cast<std::uintptr_t>(b.data()); }

std::shared_ptr<RegisteredPool> small_pool(shm::HugePages huge = shm::HugePages::kNever) {
  return std::make_shared<RegisteredPool>(0, huge, /*arena_bytes=*/1 << 20);
}

TEST(RegisteredPoolTest, RoundsSizesToTheirAlignmentUnit) {
  EXPECT_EQ(RegisteredPool::block_size(1), 64u);
  EXPECT_EQ(RegisteredPool::block_size(65), 128u);
  EXPECT_EQ(RegisteredPool::block_size(4096), 4096u);
  EXPECT_EQ(RegisteredPool::block_size(4097), 8192u);
  EXPECT_EQ(RegisteredPool::block_size(100000), 102400u);
}

TEST(RegisteredPoolTest, BlocksAreAlignedDisjointAndInsideAnArena) {
  auto pool = small_pool();
  std::vector<RegisteredBuffer> buffers;
  for (std::size_t bytes : {1u, 100u, 4000u, 5000u, 64u, 300000u, 7u}) buffers.push_back(pool->alloc(bytes));
  std::set<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  for (const RegisteredBuffer& b : buffers) {
    EXPECT_EQ(address(b) % 64, 0u) << b.size();
    if (b.size() > 4096) {
      EXPECT_EQ(address(b) % 4096, 0u) << b.size();
    }
    const auto ref = shm::ArenaRegistry::find(b.data(), b.size());
    ASSERT_TRUE(ref.has_value());
    EXPECT_GT(ref->arena, 0u);
    std::memset(b.data(), 0xab, b.size());  // writable, whole
    ranges.insert({address(b), address(b) + b.size()});
  }
  std::uintptr_t end = 0;
  for (const auto& [first, last] : ranges) {
    EXPECT_GE(first, end);
    end = last;
  }
}

TEST(RegisteredPoolTest, FreedBlocksAreReusedBySize) {
  auto pool = small_pool();
  RegisteredBuffer a = pool->alloc(10000);
  const void* where = a.data();
  a.reset();
  EXPECT_FALSE(a);
  RegisteredBuffer b = pool->alloc(12000);  // same 12 KiB block
  EXPECT_EQ(b.data(), where);
  RegisteredBuffer c = pool->alloc(12000);  // the first is taken: a new one
  EXPECT_NE(c.data(), where);
  RegisteredBuffer big = pool->alloc(2 << 20);  // larger than an arena: an arena of its own
  EXPECT_EQ(pool->arenas(), 2u);
  RegisteredBuffer moved = std::move(big);
  EXPECT_FALSE(big);  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
  EXPECT_TRUE(moved);
}

TEST(RegisteredPoolTest, BuffersKeepThePoolAlive) {
  RegisteredBuffer b;
  {
    auto pool = small_pool();
    b = pool->alloc(1000);
  }
  std::memset(b.data(), 1, b.size());
  EXPECT_TRUE(shm::ArenaRegistry::find(b.data(), b.size()).has_value());
}

TEST(RegisteredPoolTest, MemoryOutsideArenasIsNotFound) {
  std::vector<char> heap(100);
  EXPECT_FALSE(shm::ArenaRegistry::find(heap.data(), heap.size()).has_value());
  auto pool = small_pool();
  RegisteredBuffer b = pool->alloc(1000);
  // Straddling the arena's end is not inside it.
  EXPECT_FALSE(shm::ArenaRegistry::find(b.data(), (1 << 20) + 1).has_value());
}

long reserved_huge_pages() {
  std::ifstream in("/proc/sys/vm/nr_hugepages");
  long n = 0;
  in >> n;
  return n;
}

TEST(RegisteredPoolTest, HugePagesFallBackWhereTheKernelHasNone) {
  auto pool = small_pool(shm::HugePages::kTry);
  RegisteredBuffer b = pool->alloc(3 << 20);
  std::memset(b.data(), 7, b.size());
  ASSERT_EQ(pool->arenas(), 1u);
  if (reserved_huge_pages() == 0) {
    EXPECT_FALSE(pool->huge_pages(0));  // fell back to ordinary pages, and works
  } else {
    EXPECT_EQ(address(b) % (2 << 20), 0u);  // either way page aligned at the start
  }
}

// A peer maps an arena through /proc/<pid>/fd/<fd>: here this process maps its own, and sees
// the owner's writes (the same pages, not a copy).
TEST(RegisteredPoolTest, AnArenaMapsThroughProcFd) {
  auto pool = small_pool();
  RegisteredBuffer b = pool->alloc(5000);
  const auto ref = shm::ArenaRegistry::find(b.data(), b.size());
  ASSERT_TRUE(ref.has_value());
  shm::PeerArena peer = shm::PeerArena::map(::getpid(), *ref, 0, 0);
  ASSERT_GE(peer.size(), ref->offset + b.size());
  static_cast<char*>(b.data())[17] = 42;
  EXPECT_EQ(static_cast<char>(peer.data()[ref->offset + 17]), 42);
}

}  // namespace
}  // namespace braid
