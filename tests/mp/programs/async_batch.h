// A batch of every collective (allreduce sum and avg in place, reduce_scatter, reduce,
// allgather, gather, scatter, broadcast, alltoall, alltoallv, barrier) issued back to back on
// one communicator, either through the non-blocking entry points or the blocking ones, with
// each result's reference (collective_reference.h: exact in every dtype). Used by the async
// scenarios to compare async results with the reference and with the blocking results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"

namespace braid::testing {

// One collective of a batch: its buffers, what `recv` must hold once it is done (empty:
// nothing to check on this rank), and its Work (already complete when run blocking).
struct Slot {
  std::string name;
  std::vector<std::byte> send, recv, want;
  Work work;
};

class Batch {
 public:
  Batch(Communicator& comm, DType dtype, std::int64_t count) : comm_(comm), dtype_(dtype), count_(count) {}
  // Issues every collective, async or blocking, always in the same order. The buffers live in
  // the returned slots (heap storage: moving the vector keeps them in place).
  std::vector<Slot> issue(bool async);

 private:
  Slot& add(const char* name);
  std::vector<std::byte> block_of(const std::vector<std::byte>& all, int block) const;
  std::size_t bytes(std::int64_t elements) const { return static_cast<std::size_t>(elements) * dtype_size(dtype_); }
  void issue_reductions(bool async);
  void issue_gathers(bool async);
  void issue_alltoall(bool async);
  void issue_alltoallv(bool async);

  Communicator& comm_;
  DType dtype_;
  std::int64_t count_;
  std::vector<Slot> slots_;
};

}  // namespace braid::testing
