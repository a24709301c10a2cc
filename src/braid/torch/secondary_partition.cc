#include "braid/torch/secondary_partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"

namespace braid::torch {
namespace {

// Every rank's local size, agreed: equal hosts or an error on every rank.
void require_equal_hosts(Communicator& comm) {
  const Topology& topology = comm.topology();
  std::int32_t local = topology.local_size(comm.rank());
  for (int r = 0; r < comm.size(); ++r) {
    if (topology.local_size(r) != local) {
      throw InvalidArgument({.rank = comm.rank(), .peer = r, .op = "FullyShardedModule (hpZ)"},
                            fmt::format("rank {}'s host holds {} ranks and this rank's {}: hpZ partitions each host's "
                                        "copy equally, so every host must hold the same number of ranks",
                                        r, topology.local_size(r), local));
    }
  }
}

}  // namespace

SecondaryPartition::SecondaryPartition(Communicator& comm, const std::vector<std::int64_t>& unit_elements) {
  require_equal_hosts(comm);
  host_ = comm.split(comm.topology().host_of(comm.rank()), comm.local_rank());
  const auto k = static_cast<std::int64_t>(host_->size());
  for (std::int64_t elements : unit_elements) {
    if (elements % k != 0) {
      throw InvalidArgument({.rank = comm.rank(), .op = "FullyShardedModule (hpZ)"},
                            fmt::format("a unit of {} padded elements does not split into {} host slices", elements, k));
    }
    slices_.emplace_back(static_cast<std::size_t>(elements / k), 0.0f);
  }
  valid_.assign(slices_.size(), false);
}

void SecondaryPartition::keep(int unit, const float* full) {
  std::vector<float>& slice = slices_.at(static_cast<std::size_t>(unit));
  std::memcpy(slice.data(), full + static_cast<std::size_t>(host_->rank()) * slice.size(), slice.size() * sizeof(float));
  valid_[static_cast<std::size_t>(unit)] = true;
}

void SecondaryPartition::invalidate() { std::fill(valid_.begin(), valid_.end(), false); }

Work SecondaryPartition::gather(int unit, float* full) {
  std::vector<float>& slice = slices_.at(static_cast<std::size_t>(unit));
  return iallgather(*host_, slice.data(), full, static_cast<std::int64_t>(slice.size()), DType::kF32);
}

std::int64_t SecondaryPartition::slice_bytes(int unit) const {
  return static_cast<std::int64_t>(slices_.at(static_cast<std::size_t>(unit)).size() * sizeof(float));
}

std::int64_t SecondaryPartition::bytes() const {
  std::int64_t total = 0;
  for (const auto& s : slices_) total += static_cast<std::int64_t>(s.size() * sizeof(float));
  return total;
}

}  // namespace braid::torch
