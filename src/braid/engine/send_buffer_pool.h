// SendBufferPool: the staging memory that ZeRO-2's buckets in flight share (GradSync with
// zero_stage 2). A bucket's gradients are copied into a send buffer at launch and its
// reduce-scatter reads it on the background thread; once that collective has completed the
// memory is free for later buckets. One ring of `capacity` floats: buckets launch in index
// order and their collectives complete in that order (the communicator's one background
// thread), so each launch takes the next contiguous region after the newest and the oldest
// frees first, a FIFO arena without fragmentation. The engine's staging memory is then the
// ring, a couple of bucket caps, whatever the model's size: the full gradient never exists in
// the engine at once (PyTorch FSDP's reduce-scatter staging, DeepSpeed's double-buffered "ipg"
// buckets). Stages 0 and 1 keep one buffer per bucket instead (grad_sync.cc).
//
// When the region does not fit, acquire() waits for the oldest loans' collectives. That wait
// needs no timeout of its own (each queued collective is bounded by BRAID_TIMEOUT, and ops
// queued behind a failed one fail at once: comm/work.h); a failed collective's error is not
// raised here but by its owner's wait in GradSync::finish().
//
// Thread-safety: none; GradSync calls it under its own lock.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "braid/comm/work.h"
#include "braid/engine/bucket_memory.h"

namespace braid::engine {

class SendBufferPool {
 public:
  // (Re)allocates a zeroed ring of `capacity` floats, all free: in memory registered on
  // `registered_for` (the zero-copy reduce-scatter, bucket_memory.h) when it is not null, else
  // on the heap. REQUIRES: nothing lent (after reclaim_all(), once the loans' collectives
  // completed).
  void reset(std::size_t capacity, Communicator* registered_for = nullptr);

  // `floats` contiguous floats for the next launch, waiting for the oldest loans to complete
  // when they do not fit. REQUIRES: 0 < floats <= capacity(). The region is lent at once; give it
  // the Work that reads it with attach() (until then it counts as already complete).
  float* acquire(std::size_t floats);
  void attach(Work work);
  // Every loan's collective has completed (GradSync::finish waited for them): all free again.
  void reclaim_all();

  std::size_t capacity() const { return ring_.size(); }
  std::size_t bytes() const { return ring_.size() * sizeof(float); }
  std::size_t lent_floats() const { return lent_floats_; }
  // The most floats lent at once since reset() (at most capacity()).
  std::size_t peak_lent() const { return peak_lent_; }

 private:
  struct Loan {
    std::size_t offset = 0, floats = 0;
    Work work;
  };
  bool fits(std::size_t floats, std::size_t& offset) const;
  void retire_oldest();

  BucketMemory ring_;
  std::deque<Loan> lent_;  // in launch order: the oldest first
  std::size_t lent_floats_ = 0, peak_lent_ = 0;
};

}  // namespace braid::engine
