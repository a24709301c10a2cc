// A reusable scratch buffer: grows to the largest size requested, never shrinks, asks for
// transparent huge pages and is faulted in when it grows. Fresh 4 KiB pages cost ~0.4 GB/s to
// first touch on the VMs braid targets, so allocating per call would dominate large
// collectives (DESIGN.md, "Memory is allocated once and reused").
//
// Thread-safety: none; owned by one Communicator, used by one thread at a time.
#pragma once

#include <cstddef>

namespace braid {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ~ScratchBuffer();
  ScratchBuffer(ScratchBuffer&& other) noexcept;
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // At least `bytes` bytes, valid until the next call that needs more.
  std::byte* get(std::size_t bytes);
  std::size_t capacity() const { return capacity_; }

 private:
  void release();
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace braid
