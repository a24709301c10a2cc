// Bytes this rank moves on each axis of a process mesh (dp, tp, pp, ...), counted the way
// braid-plan counts them (plan/comm_volume.h: bytes sent per rank by the bandwidth-optimal
// algorithm), so a run's report can be held against the planner's formulas:
//
//   allreduce of S bytes over n ranks      2 (n-1)/n S
//   allgather / reduce-scatter, piece P     (n-1) P       (= (n-1)/n of the full tensor)
//   alltoall of S bytes per peer            (n-1) S
//   broadcast, reduce, gather, scatter      (n-1)/n S
//   point-to-point (add_sent)               the message's bytes
//
// These are algorithm bytes, not transport bytes: shared-memory algorithms copy through one
// segment and move other amounts, and a compressed gradient sync reports its own wire bytes.
// What the figure pins down is what the model asks for (how many collectives, of which sizes,
// on which axis), which is what the planner models.
//
//   braid::parallel::AxisTraffic traffic;
//   traffic.watch(mesh.group("tp"), "tp");      // every collective on that communicator
//   traffic.add_sent("pp", activation_bytes);   // p2p the caller moves itself
//   std::map<std::string, double> per_axis = traffic.take();   // and start counting afresh
//
// Thread-safety: counting is thread-safe (non-blocking collectives report from the
// communicator's background thread). REQUIRES: every watched communicator outlives the counter
// or is unwatched first (the destructor unwatches them all).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/mutex.h"
#include "braid/base/op_kind.h"
#include "braid/comm/communicator.h"

namespace braid::parallel {

// The formula above for one collective whose call moved `bytes` (its count argument).
double algorithm_bytes(OpKind op, double bytes, int ranks);

class AxisTraffic {
 public:
  AxisTraffic() = default;
  ~AxisTraffic();
  AxisTraffic(const AxisTraffic&) = delete;
  AxisTraffic& operator=(const AxisTraffic&) = delete;

  // Counts every collective `comm` runs from now on under `axis`. A communicator of one rank
  // moves nothing and is not watched.
  void watch(Communicator& comm, std::string axis);
  void unwatch(Communicator& comm);
  void add_sent(std::string_view axis, double bytes);

  // The bytes counted per axis since the last take (every watched axis appears, 0 included).
  std::map<std::string, double> take();
  // The seconds this rank spent inside the watched collectives per axis since the last call
  // (the collectives' own clock: CollectiveRecord's start and end).
  std::map<std::string, double> take_seconds();

 private:
  void add(const std::string& axis, double bytes, double seconds = 0);

  Mutex mu_;
  std::map<std::string, double, std::less<>> bytes_ BRAID_GUARDED_BY(mu_);
  std::map<std::string, double, std::less<>> seconds_ BRAID_GUARDED_BY(mu_);
  std::vector<Communicator*> watched_;  // the caller's thread only
};

}  // namespace braid::parallel
