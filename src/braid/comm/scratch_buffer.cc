#include "braid/comm/scratch_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "braid/base/error.h"

namespace braid {

namespace {
constexpr std::size_t kHugePage = 2u << 20;
}

ScratchBuffer::~ScratchBuffer() { release(); }

ScratchBuffer::ScratchBuffer(ScratchBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

std::byte* ScratchBuffer::get(std::size_t bytes) {
  if (bytes <= capacity_) return data_;
  release();
  std::size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_system_error({.op = "scratch"}, "mmap of a scratch buffer", errno);
  ::madvise(p, size, MADV_HUGEPAGE);
  std::memset(p, 0, size);  // fault it in now, not inside a transfer
  data_ = static_cast<std::byte*>(p);
  capacity_ = size;
  return data_;
}

void ScratchBuffer::release() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace braid
