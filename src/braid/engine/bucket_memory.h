// The flat float buffer of one GradSync bucket (grad_sync.cc): in registered memory
// (alloc_registered, comm/registered_buffer.h) when asked for, so that the bucket's
// allreduce takes the zero-copy shared-memory path, else an ordinary vector. Either way
// zero-filled when assigned, allocated and faulted once per plan.
//
// Thread-safety: as the bucket that owns it.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/comm/registered_buffer.h"

namespace braid::engine {

class BucketMemory {
 public:
  // `elements` zero floats; from alloc_registered on `registered_for` when it is not null.
  void assign(Communicator* registered_for, std::size_t elements) {
    registered_ = {};
    heap_.clear();
    if (registered_for != nullptr && elements > 0) {
      registered_ = alloc_registered(*registered_for, elements * sizeof(float));
      std::memset(registered_.data(), 0, elements * sizeof(float));  // a reused block holds old bytes
      data_ = static_cast<float*>(registered_.data());
    } else {
      heap_.assign(elements, 0.0f);
      data_ = heap_.data();
    }
    size_ = elements;
  }
  void assign(Communicator& comm, std::size_t elements, bool registered) {
    assign(registered ? &comm : nullptr, elements);
  }

  float* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool registered() const { return static_cast<bool>(registered_); }
  operator std::span<float>() const { return {data_, size_}; }  // NOLINT(google-explicit-constructor)

 private:
  RegisteredBuffer registered_;
  std::vector<float> heap_;
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace braid::engine
