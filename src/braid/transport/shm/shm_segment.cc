#include "braid/transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "braid/base/error.h"
#include "braid/base/unique_fd.h"

namespace braid::shm {

namespace {

std::byte* map_fd(int fd, std::size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw_system_error({.op = "shm.map"}, "mmap of shared-memory segment " + name, errno);
  return static_cast<std::byte*>(p);
}

}  // namespace

Segment Segment::create(const std::string& name, std::size_t bytes) {
  UniqueFd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
  if (!fd.valid()) throw_system_error({.op = "shm.create"}, "shm_open(" + name + ")", errno);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    ::shm_unlink(name.c_str());
    throw_system_error({.op = "shm.create"}, "ftruncate of " + name + " (is /dev/shm full?)", err);
  }
  std::byte* data = map_fd(fd.get(), bytes, name);
  ::madvise(data, bytes, MADV_HUGEPAGE);
  // Fault every page in now, while nothing waits on it. tmpfs pages beyond /dev/shm's size
  // would otherwise raise SIGBUS in the middle of a transfer; here the failure is up front.
  std::memset(data, 0, bytes);
  return Segment(name, data, bytes);
}

Segment Segment::open(const std::string& name) {
  UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600));
  if (!fd.valid()) throw_system_error({.op = "shm.open"}, "shm_open(" + name + ")", errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw_system_error({.op = "shm.open"}, "fstat of " + name, errno);
  auto bytes = static_cast<std::size_t>(st.st_size);
  return Segment(name, map_fd(fd.get(), bytes, name), bytes);
}

void Segment::unlink(const std::string& name) { ::shm_unlink(name.c_str()); }

Segment::~Segment() { release(); }

Segment::Segment(Segment&& other) noexcept
    : name_(std::move(other.name_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void Segment::release() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace braid::shm
