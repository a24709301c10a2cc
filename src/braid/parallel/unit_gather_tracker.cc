#include "braid/parallel/unit_gather_tracker.h"

#include <fmt/format.h>

#include <algorithm>

#include "braid/base/error.h"

namespace braid::parallel {

UnitGatherTracker::UnitGatherTracker(std::vector<std::int64_t> unit_bytes, std::vector<std::int64_t> shard_bytes,
                                     int world_size, int max_gathered)
    : state_(unit_bytes.size(), UnitState::kFree),
      unit_bytes_(std::move(unit_bytes)),
      shard_bytes_(std::move(shard_bytes)),
      gather_payload_(shard_bytes_),
      reduce_payload_(shard_bytes_),
      world_size_(world_size),
      max_gathered_(max_gathered) {
  ErrorContext context{.op = "UnitGatherTracker"};
  if (max_gathered < 1) throw InvalidArgument(context, fmt::format("max_gathered_units {}: must be >= 1", max_gathered));
  if (world_size < 1) throw InvalidArgument(context, fmt::format("world size {}: must be >= 1", world_size));
  if (unit_bytes_.size() != shard_bytes_.size()) {
    throw InvalidArgument(context, fmt::format("{} unit sizes but {} shard sizes", unit_bytes_.size(), shard_bytes_.size()));
  }
}

void UnitGatherTracker::start_gathering(int unit) {
  state_[static_cast<std::size_t>(unit)] = UnitState::kGathering;
  counters_.gathered_now += 1;
  counters_.max_gathered = std::max(counters_.max_gathered, counters_.gathered_now);
  counters_.gathered_bytes_now += unit_bytes_[static_cast<std::size_t>(unit)];
  counters_.peak_gathered_bytes = std::max(counters_.peak_gathered_bytes, counters_.gathered_bytes_now);
  counters_.allgathers += 1;
  counters_.wire_bytes += static_cast<std::uint64_t>(world_size_ - 1) *
                          static_cast<std::uint64_t>(gather_payload_[static_cast<std::size_t>(unit)]);
}

bool UnitGatherTracker::demand(int unit) {
  if (state(unit) != UnitState::kFree) return false;
  if (!has_room()) {
    throw Mismatch({.op = "FullyShardedModule"},
                   fmt::format("unit {} is needed but max_gathered_units {} are gathered ({}): a unit was not freed "
                               "after it ran",
                               unit, max_gathered_, describe_gathered()));
  }
  start_gathering(unit);
  return true;
}

std::vector<int> UnitGatherTracker::prefetch_after(int unit, int direction, int begin, int end) {
  std::vector<int> issued;
  begin = std::max(begin, 0);
  end = std::min(end, unit_count());
  for (int v = unit + direction; v >= begin && v < end && has_room(); v += direction) {
    if (state(v) != UnitState::kFree) continue;
    start_gathering(v);
    issued.push_back(v);
  }
  return issued;
}

void UnitGatherTracker::gathered(int unit) { state_.at(static_cast<std::size_t>(unit)) = UnitState::kGathered; }

void UnitGatherTracker::freed(int unit) {
  if (state(unit) == UnitState::kFree) return;
  state_[static_cast<std::size_t>(unit)] = UnitState::kFree;
  counters_.gathered_now -= 1;
  counters_.gathered_bytes_now -= unit_bytes_[static_cast<std::size_t>(unit)];
}

void UnitGatherTracker::count_reduce_scatter(int unit) {
  counters_.reduce_scatters += 1;
  counters_.wire_bytes += static_cast<std::uint64_t>(world_size_ - 1) *
                          static_cast<std::uint64_t>(reduce_payload_.at(static_cast<std::size_t>(unit)));
}

void UnitGatherTracker::set_wire_payload(int unit, std::int64_t gather_bytes, std::int64_t reduce_bytes) {
  gather_payload_.at(static_cast<std::size_t>(unit)) = gather_bytes;
  reduce_payload_.at(static_cast<std::size_t>(unit)) = reduce_bytes;
}

std::string UnitGatherTracker::describe_gathered() const {
  std::string out;
  for (int u = 0; u < unit_count(); ++u) {
    if (state(u) == UnitState::kFree) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} ({})", u, state(u) == UnitState::kGathering ? "gathering" : "gathered");
  }
  return out.empty() ? "none" : out;
}

}  // namespace braid::parallel
