#include "braid/transport/shm/memfd_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/mutex.h"

namespace braid::shm {

namespace {

constexpr std::size_t kHugePage = 2 << 20;
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t bytes, std::size_t unit) { return (bytes + unit - 1) / unit * unit; }

struct Listed {
  const std::byte* base;
  std::size_t size;
  ArenaRef ref;
};

class Registry {
 public:
  static Registry& get() {
    static Registry* registry = new Registry();  // never destroyed: arenas may outlive statics
    return *registry;
  }
  void add(const std::byte* base, std::size_t size, ArenaRef ref) {
    MutexLock lock(mu_);
    listed_.push_back({base, size, ref});
  }
  void remove(const std::byte* base) {
    MutexLock lock(mu_);
    std::erase_if(listed_, [base](const Listed& l) { return l.base == base; });
  }
  std::optional<ArenaRef> find(const std::byte* p, std::size_t bytes) {
    MutexLock lock(mu_);
    for (const Listed& l : listed_) {
      if (p >= l.base && p < l.base + l.size && bytes <= static_cast<std::size_t>(l.base + l.size - p)) {
        ArenaRef ref = l.ref;
        ref.offset = static_cast<std::uint64_t>(p - l.base);
        return ref;
      }
    }
    return std::nullopt;
  }

 private:
  Mutex mu_;
  std::vector<Listed> listed_ BRAID_GUARDED_BY(mu_);
};

std::atomic<std::uint32_t> g_next_arena_id{1};

// Sizes and maps `fd` (MAP_POPULATE); nullptr with errno set where the kernel refuses.
std::byte* size_and_map(int fd, std::size_t bytes) {
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

}  // namespace

Arena Arena::create(std::size_t bytes, HugePages huge, int rank) {
  Arena a;
  const std::uint32_t id = g_next_arena_id.fetch_add(1);
  const std::string name = fmt::format("braid-arena-{}", id);  // shows in /proc/<pid>/fd only
  if (huge == HugePages::kTry) {
    UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_HUGETLB));
    const std::size_t size = round_up(std::max<std::size_t>(bytes, 1), kHugePage);
    // Without reserved huge pages mmap fails (ENOMEM) or populates nothing: fall back.
    if (fd.valid()) {
      if (std::byte* p = size_and_map(fd.get(), size)) {
        a.fd_ = std::move(fd), a.data_ = p, a.size_ = size, a.huge_ = true;
      }
    }
  }
  if (a.data_ == nullptr) {
    UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
    if (!fd.valid()) throw_system_error({.rank = rank, .op = "alloc_registered"}, "memfd_create", errno);
    const std::size_t size = round_up(std::max<std::size_t>(bytes, 1), kPage);
    std::byte* p = size_and_map(fd.get(), size);
    if (p == nullptr) {
      throw_system_error({.rank = rank, .op = "alloc_registered"},
                         fmt::format("mapping a {}-byte memfd arena (is memory or RLIMIT_MEMLOCK short?)", size), errno);
    }
    ::madvise(p, size, MADV_HUGEPAGE);  // THP for shmem where shmem_enabled allows
    a.fd_ = std::move(fd), a.data_ = p, a.size_ = size;
  }
  a.id_ = id;
  Registry::get().add(a.data_, a.size_, {.arena = id, .fd = a.fd_.get()});
  return a;
}

Arena::~Arena() { release(); }

Arena::Arena(Arena&& other) noexcept
    : fd_(std::move(other.fd_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      id_(std::exchange(other.id_, 0)), huge_(other.huge_) {}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::move(other.fd_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    id_ = std::exchange(other.id_, 0);
    huge_ = other.huge_;
  }
  return *this;
}

void Arena::release() {
  if (data_ == nullptr) return;
  Registry::get().remove(data_);
  ::munmap(data_, size_);
  data_ = nullptr;
  fd_.reset();
}

PeerArena PeerArena::map(pid_t pid, const ArenaRef& ref, int rank, int peer) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, ref.fd);
  const ErrorContext where{.rank = rank, .peer = peer, .op = "shm.map_registered"};
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    throw_system_error(where, fmt::format("open({}) of the peer's registered arena {} (is the peer another user, or "
                                          "does a security module forbid it?)", path, ref.arena), errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_system_error(where, "fstat of " + path, errno);
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (p == MAP_FAILED) throw_system_error(where, "mmap of " + path, errno);
  PeerArena m;
  m.data_ = static_cast<std::byte*>(p);
  m.size_ = bytes;
  return m;
}

PeerArena::~PeerArena() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

PeerArena::PeerArena(PeerArena&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PeerArena& PeerArena::operator=(PeerArena&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

std::optional<ArenaRef> ArenaRegistry::find(const void* p, std::size_t bytes) {
  return Registry::get().find(static_cast<const std::byte*>(p), bytes);
}

}  // namespace braid::shm
