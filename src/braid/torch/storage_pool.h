// StoragePool: the memory FullyShardedModule's units are gathered into, reused from one gather
// to the next (DESIGN.md: memory is allocated once and reused; a fresh allocation per gather
// would fault its pages in again every time, ~0.4 GB/s on this VM against ~20 GB/s memcpy).
//
// fill() gives a tensor's StorageImpl a buffer of the pool's size (every unit's full buffer fits:
// the pool is sized to the largest unit) and sets its nbytes to the tensor's; drain() takes the
// buffer back, leaving the StorageImpl empty (nbytes 0, a null DataPtr: the unit's parameters
// and autograd's saved tensors hold nothing). Drained buffers are kept for the next fill() while
// fewer than `keep` are idle, and freed beyond that, so the pool holds at most `keep` idle
// buffers plus those lent out: with keep = max_gathered_units, the memory the cap allows anyway
// (PyTorch FSDP gets the same from CUDA's caching allocator).
//
// Thread-safety: one thread.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braid::torch {

class StoragePool {
 public:
  StoragePool(std::size_t buffer_bytes, int keep) : buffer_bytes_(buffer_bytes), keep_(keep) {}

  // REQUIRES: `tensor` is contiguous over the whole of its (empty) storage and fits a buffer.
  void fill(const ::torch::Tensor& tensor);
  // REQUIRES: `tensor`'s storage was filled by this pool (or is empty: then a no-op).
  void drain(const ::torch::Tensor& tensor);

  // Bytes the pool holds now: idle buffers and buffers lent out.
  std::int64_t held_bytes() const { return static_cast<std::int64_t>((idle_.size() + lent_) * buffer_bytes_); }

 private:
  std::size_t buffer_bytes_;
  std::size_t keep_;
  std::vector<at::DataPtr> idle_;
  std::size_t lent_ = 0;
};

}  // namespace braid::torch
