#include "braid/engine/send_buffer_pool.h"

#include <algorithm>

#include "braid/base/check.h"

namespace braid::engine {

void SendBufferPool::reset(std::size_t capacity, Communicator* registered_for) {
  lent_.clear();
  ring_.assign(registered_for, capacity);
  lent_floats_ = peak_lent_ = 0;
}

// The free space of the ring is after the newest loan (up to the end, or, once the ring has
// wrapped, up to the oldest loan) and, before wrapping, in front of the oldest loan.
bool SendBufferPool::fits(std::size_t floats, std::size_t& offset) const {
  if (lent_.empty()) {
    offset = 0;
    return floats <= ring_.size();
  }
  std::size_t oldest = lent_.front().offset, head = lent_.back().offset + lent_.back().floats;
  if (head > oldest) {  // not wrapped: the loans lie in [oldest, head)
    if (head + floats <= ring_.size()) return offset = head, true;
    return offset = 0, floats <= oldest;
  }
  return offset = head, head + floats <= oldest;  // wrapped: the loans lie in [oldest, end) and [0, head)
}

void SendBufferPool::retire_oldest() {
  try {
    lent_.front().work.wait();
  } catch (...) {  // the collective failed: GradSync::finish() rethrows it from the bucket's Work
  }
  lent_floats_ -= lent_.front().floats;
  lent_.pop_front();
}

float* SendBufferPool::acquire(std::size_t floats) {
  BRAID_CHECK(floats > 0 && floats <= ring_.size(), InvalidArgument, {.op = "GradSync (internal)"},
              "a send buffer of {} floats in a ring of {}", floats, ring_.size());
  std::size_t offset = 0;
  while (!fits(floats, offset)) retire_oldest();
  lent_.push_back({.offset = offset, .floats = floats});
  lent_floats_ += floats;
  peak_lent_ = std::max(peak_lent_, lent_floats_);
  return ring_.data() + offset;
}

void SendBufferPool::attach(Work work) { lent_.back().work = std::move(work); }

void SendBufferPool::reclaim_all() {
  lent_.clear();
  lent_floats_ = 0;
}

}  // namespace braid::engine
