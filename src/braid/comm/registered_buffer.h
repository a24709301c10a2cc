// Registered memory (docs/registered-memory.md): braid::alloc_registered(comm, bytes) returns
// a braid::RegisteredBuffer, memory that every rank on the host can read and write in place. A
// collective whose send and recv buffers lie in registered memory on every rank reads its
// peers' inputs where they are and writes each output once, instead of staging them through
// shared memory (NCCL's ncclMemAlloc / ncclCommRegister).
//
//   braid::RegisteredBuffer buf = braid::alloc_registered(comm, n * sizeof(float));
//   auto* x = static_cast<float*>(buf.data());
//   braid::allreduce(comm, x, x, n, braid::DType::kF32, braid::ReduceOp::kSum);
//
// Free functions rather than Communicator members: the pool is a communicator attachment
// (comm/registered_pool.h), and communicator.h, which every file includes, stays as it is.
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

class Communicator;
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

// `bytes` from this rank's pool of shared arenas (one pool per communicator, created by the
// first call). alloc_registered(comm, 0) returns an empty buffer. Not collective: each rank
// allocates its own, nothing has to match across ranks. Thread-safe. SystemError if the
// kernel gives no memory.
RegisteredBuffer alloc_registered(Communicator& comm, std::size_t bytes);

// Checks that [data, data + bytes) can be used as registered memory: it must lie inside one
// buffer from alloc_registered (of any communicator of this process), e.g. a view of a slice.
// Other memory throws InvalidArgument naming the rank: Linux cannot hand a private (malloc,
// stack, anonymous) mapping to another process; collectives on such buffers take the staged
// path (docs/registered-memory.md: process_vm_readv / CMA is the single-copy alternative).
void register_memory(const Communicator& comm, const void* data, std::size_t bytes);

}  // namespace braid
