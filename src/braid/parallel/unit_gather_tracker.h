// UnitGatherTracker: the bookkeeping of ZeRO stage 3's gathered units (torch/fully_sharded.h,
// docs/zero.md "Stage 3"), torch-free so that its rules are tested without a model or a rank.
//
// A unit is a group of parameters gathered and freed together (FSDP's wrapped module: a layer,
// a transformer block). Between uses a unit is free: only each rank's shard exists. Before it
// runs it is gathered (its full padded buffer allocated and allgathered); after it ran it is
// freed again. The tracker decides what may be gathered and counts:
//   - the cap: at most max_gathered units are allocated at once, counting those whose
//     allgather is still in flight (their memory is allocated the moment it is issued). This is
//     FSDP's limit_all_gathers in the strict form: a demanded gather beyond it is a bug of the
//     caller's order (it throws Mismatch naming the units), never a silent overshoot;
//   - prefetch: after a unit is gathered, the next free units in the direction of travel
//     (forward: higher indices; backward: lower) are issued while the cap allows, so their
//     allgathers overlap this unit's compute;
//   - the counters: gathered now and the most ever, bytes gathered now and their peak,
//     allgathers and reduce-scatters issued and their bytes on the wire.
//
// Thread-safety: none; one thread (the training loop and autograd's hooks, which run on it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::parallel {

struct GatherCounters {
  int gathered_now = 0;                   // units allocated (gathered or gathering) now
  int max_gathered = 0;                   // the most at once, ever
  std::int64_t gathered_bytes_now = 0;    // their full buffers' bytes
  std::int64_t peak_gathered_bytes = 0;
  std::int64_t allgathers = 0;            // issued
  std::int64_t reduce_scatters = 0;       // issued
  std::uint64_t wire_bytes = 0;           // algorithm bytes sent: (n - 1) x shard bytes per collective
};

enum class UnitState { kFree, kGathering, kGathered };

class UnitGatherTracker {
 public:
  // unit_bytes[u]: unit u's full buffer in bytes; shard_bytes[u]: one rank's shard of it.
  // Throws InvalidArgument when max_gathered < 1, world_size < 1 or the vectors differ in size.
  UnitGatherTracker(std::vector<std::int64_t> unit_bytes, std::vector<std::int64_t> shard_bytes, int world_size,
                    int max_gathered);

  int unit_count() const { return static_cast<int>(state_.size()); }
  UnitState state(int unit) const { return state_.at(static_cast<std::size_t>(unit)); }
  bool has_room() const { return counters_.gathered_now < max_gathered_; }
  int max_gathered() const { return max_gathered_; }

  // Unit `unit` is needed now. Returns true when its allgather must be issued (it was free):
  // it then counts as gathering. Throws Mismatch when it is free and the cap is reached.
  bool demand(int unit);
  // The units whose prefetch to issue now, after `unit` was demanded, walking `direction`
  // (+1 forward, -1 backward) over free units while the cap allows; each counts as gathering.
  std::vector<int> prefetch_after(int unit, int direction) { return prefetch_after(unit, direction, 0, unit_count()); }
  // The same, stopping at the ends of units [begin, end) (a pipeline chunk's units: the next
  // call's are the schedule's to choose, so a prefetch past the chunk could be wasted).
  std::vector<int> prefetch_after(int unit, int direction, int begin, int end);
  void gathered(int unit);  // its allgather completed
  void freed(int unit);     // its full buffer released (no-op when already free)
  void count_reduce_scatter(int unit);
  // The bytes one allgather and one reduce-scatter of `unit` send to each peer when a codec
  // shrinks them (ZeRO++ on stage 3): what wire_bytes counts from then on (default: the shard's
  // bytes, for both).
  void set_wire_payload(int unit, std::int64_t gather_bytes, std::int64_t reduce_bytes);

  const GatherCounters& counters() const { return counters_; }
  // "units gathered now: 3 (gathering), 4 (gathered)" for error messages.
  std::string describe_gathered() const;

 private:
  void start_gathering(int unit);

  std::vector<UnitState> state_;
  std::vector<std::int64_t> unit_bytes_, shard_bytes_;
  std::vector<std::int64_t> gather_payload_, reduce_payload_;  // per peer and collective
  int world_size_ = 1;
  int max_gathered_ = 1;
  GatherCounters counters_;
};

}  // namespace braid::parallel
