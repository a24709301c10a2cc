// Time spent inside a communicator's collectives, and which algorithms ran them: braid-serve's
// split of a token's latency into communication (inside the TP allreduces) and compute (the
// rest). Watches the communicator through its CollectiveObserver (collectives/
// collective_observer.h), so it sees what the tuner picked, not what we hoped it would.
//
//   CollectiveMeter meter(tp);
//   std::int64_t before = meter.total_ns();
//   decoder.step(...);
//   std::int64_t comm_ns = meter.total_ns() - before;
//
// Thread-safety: the callback may run on any thread; the readers take the same lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "braid/base/mutex.h"
#include "braid/comm/communicator.h"

namespace braid::serve {

class CollectiveMeter {
 public:
  // REQUIRES: `comm` outlives the meter. Replaces any previous meter of `comm`.
  explicit CollectiveMeter(Communicator& comm);
  ~CollectiveMeter();
  CollectiveMeter(const CollectiveMeter&) = delete;
  CollectiveMeter& operator=(const CollectiveMeter&) = delete;

  std::int64_t total_ns() const;
  // "allreduce one_shot 2048 B" -> calls.
  std::map<std::string, std::int64_t> calls() const;

 private:
  Communicator* comm_;
  mutable Mutex mu_;
  std::int64_t total_ns_ BRAID_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::int64_t> calls_ BRAID_GUARDED_BY(mu_);
};

}  // namespace braid::serve
