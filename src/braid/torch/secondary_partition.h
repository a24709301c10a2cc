// ZeRO++'s hpZ (Wang et al. 2023, "hierarchical partitioning"): a second copy of stage 3's
// parameters, partitioned over the ranks of each host only, so that the backward's allgathers
// stay inside the host. After a unit's forward allgather (over every rank) each rank keeps its
// host slice of the gathered unit: the unit's n x S padded elements cut into k equal slices, k
// the ranks per host, slice j for local rank j. Before the unit's backward the host's ranks
// allgather their slices (over the host's communicator, shared memory) and rebuild exactly the
// values the forward computed with; nothing crosses a host boundary. The price is memory: n / k
// times a shard per unit (a slice is k-th of the unit where a shard is n-th).
//
// Requires every host to hold the same number of ranks (so k divides n and every unit's padded
// buffer): InvalidArgument on every rank otherwise. With one host it is valid and changes
// nothing but the communicator (k = n).
//
// Thread-safety: the training thread (FullyShardedModule's).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/comm/work.h"

namespace braid::torch {

class SecondaryPartition {
 public:
  // Collective over `comm` (one split by host). `unit_elements`: every unit's padded buffer.
  SecondaryPartition(Communicator& comm, const std::vector<std::int64_t>& unit_elements);

  // After unit u's forward allgather: keeps this rank's host slice of `full`.
  void keep(int unit, const float* full);
  // Whether unit u's slice holds this step's values (kept since the last invalidate()).
  bool holds(int unit) const { return valid_.at(static_cast<std::size_t>(unit)); }
  // The parameters changed (an optimizer step): every slice is stale until the next forward.
  void invalidate();
  // Rebuilds unit u's `full` from the host's slices, on the host communicator's background queue.
  Work gather(int unit, float* full);

  int ranks_per_host() const { return host_->size(); }
  // Bytes one rank sends per peer for unit u's host gather.
  std::int64_t slice_bytes(int unit) const;
  std::int64_t bytes() const;  // the slices' memory on this rank

 private:
  std::optional<Communicator> host_;
  std::vector<std::vector<float>> slices_;
  std::vector<bool> valid_;
};

}  // namespace braid::torch
