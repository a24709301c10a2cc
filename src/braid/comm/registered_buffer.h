// braid::RegisteredBuffer: memory that every rank on the host can read and write in place,
// returned by Communicator::alloc (docs/registered-memory.md). A collective whose send and
// recv buffers lie in registered memory on every rank reads its peers' inputs where they are
// and writes each output once, instead of staging them through shared memory.
//
//   braid::RegisteredBuffer buf = comm.alloc(n * sizeof(float));
//   auto* x = static_cast<float*>(buf.data());
//   braid::allreduce(comm, x, x, n, braid::DType::kF32, braid::ReduceOp::kSum);
//
// Move-only; the memory goes back to the communicator's pool when the buffer is destroyed
// (the pool outlives the communicator while buffers are alive). Aligned to 64 bytes, 4 KiB
// from 4 KiB on. Zero-filled on first allocation; reused blocks hold what they held.
//
// Thread-safety: distinct buffers may be used and destroyed from any threads.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace braid {

class RegisteredPool;

class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  RegisteredBuffer(std::shared_ptr<RegisteredPool> pool, std::byte* data, std::size_t size, std::size_t block)
      : pool_(std::move(pool)), data_(data), size_(size), block_(block) {}
  ~RegisteredBuffer() { reset(); }
  RegisteredBuffer(RegisteredBuffer&& other) noexcept
      : pool_(std::move(other.pool_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
        block_(std::exchange(other.block_, 0)) {}
  RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      pool_ = std::move(other.pool_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      block_ = std::exchange(other.block_, 0);
    }
    return *this;
  }
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }
  // Gives the memory back to the pool now (a no-op on an empty buffer).
  void reset();

 private:
  std::shared_ptr<RegisteredPool> pool_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;   // what was asked for
  std::size_t block_ = 0;  // what the pool gave (size_ rounded up)
};

}  // namespace braid
