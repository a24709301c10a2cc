// A single-producer single-consumer byte ring in shared memory. The writer and the reader
// each keep a private copy of their own counter and publish it; the other side's counter is
// read with acquire. Messages (header + payload) are streamed through it in pieces, so a
// receiver copies one piece out while the sender copies the next one in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "braid/transport/shm/shm_layout.h"

namespace braid::shm {

class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(RingControl* control, std::byte* data, std::size_t capacity)
      : control_(control), data_(data), capacity_(capacity), head_(control->head.load(std::memory_order_relaxed)) {}

  std::size_t writable() const {
    return capacity_ - static_cast<std::size_t>(head_ - control_->tail.load(std::memory_order_acquire));
  }
  // REQUIRES: n <= writable(). Copies without publishing.
  void put(const void* src, std::size_t n) {
    std::size_t at = static_cast<std::size_t>(head_ % capacity_);
    std::size_t first = n < capacity_ - at ? n : capacity_ - at;
    std::memcpy(data_ + at, src, first);
    if (n > first) std::memcpy(data_, static_cast<const std::byte*>(src) + first, n - first);
    head_ += n;
  }
  void publish() { control_->head.store(head_, std::memory_order_release); }

 private:
  RingControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t head_ = 0;
};

class RingReader {
 public:
  RingReader() = default;
  RingReader(RingControl* control, const std::byte* data, std::size_t capacity)
      : control_(control), data_(data), capacity_(capacity), tail_(control->tail.load(std::memory_order_relaxed)) {}

  std::size_t readable() const {
    return static_cast<std::size_t>(control_->head.load(std::memory_order_acquire) - tail_);
  }
  // REQUIRES: n <= readable(). Copies out without releasing the space.
  void get(void* dst, std::size_t n) {
    std::size_t at = static_cast<std::size_t>(tail_ % capacity_);
    std::size_t first = n < capacity_ - at ? n : capacity_ - at;
    std::memcpy(dst, data_ + at, first);
    if (n > first) std::memcpy(static_cast<std::byte*>(dst) + first, data_, n - first);
    tail_ += n;
  }
  void release() { control_->tail.store(tail_, std::memory_order_release); }

 private:
  RingControl* control_ = nullptr;
  const std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t tail_ = 0;
};

}  // namespace braid::shm
