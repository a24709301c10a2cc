// braid works on contiguous buffers; c10d's callers pass any strided tensors, and lists of them
// where braid takes one flat buffer. These stage the caller's tensors into the buffers braid
// reads and writes, and copy results back.
#pragma once

#include <vector>

#include <ATen/ATen.h>

namespace braid::python {

// The contiguous buffer braid works in for a caller's tensor. Construction (on the caller's
// thread) makes a contiguous copy where needed; finish() (on braid's worker, after the
// collective) copies the result back into the caller's tensor if they differ.
// An input-only Staged (a send, a broadcast's source) never copies back.
class Staged {
 public:
  enum class Direction { kInput, kInOut };
  explicit Staged(const at::Tensor& user, Direction direction = Direction::kInOut)
      : user_(user), work_(user.contiguous()), copy_back_(direction == Direction::kInOut && !work_.is_same(user)) {}
  at::Tensor& work() { return work_; }
  void finish() {
    if (copy_back_) user_.copy_(work_);
  }

 private:
  at::Tensor user_;
  at::Tensor work_;
  bool copy_back_;
};

// The tensors flattened and laid end to end in one new contiguous tensor (their common dtype).
at::Tensor concatenated(const std::vector<at::Tensor>& tensors);
// An empty contiguous tensor of `count` elements of `like`'s dtype.
at::Tensor flat_like(const at::Tensor& like, std::int64_t count);
// Copies consecutive slices of `flat` into `tensors` (each its own shape), the inverse of
// concatenated().
void scatter_back(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

}  // namespace braid::python
