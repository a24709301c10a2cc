// A handle on an operation in flight (c10d's Work contract):
//
//   Work w = comm.isend(...);   // returns at once; bytes start moving
//   ...                         // compute; the buffer must stay alive and untouched
//   w.wait();                   // == while (!w.test()) sleep-ish; rethrows the op's error
//
// wait() drives communication progress on the calling thread until the operation completes,
// its error is known (rethrown here), or the timeout passes (braid::Timeout). test() makes one
// progress pass and reports completion without blocking. A default-constructed Work is
// already complete. Handles are cheap to copy; all copies observe the same operation.
//
// Thread-safety: wait/test may be called from any thread.
#pragma once

#include <memory>
#include <optional>

#include "braid/base/clock.h"
#include "braid/transport/request.h"

namespace braid {

class Fabric;

class Work {
 public:
  Work() = default;
  Work(std::shared_ptr<Fabric> fabric, RequestPtr request) : fabric_(std::move(fabric)), request_(std::move(request)) {}

  // Blocks until done; BRAID_TIMEOUT (300 s) unless `timeout` is given.
  void wait(std::optional<Seconds> timeout = std::nullopt);
  bool test();
  // Whether the operation has finished (successfully or not), without progressing anything.
  bool completed() const;

 private:
  std::shared_ptr<Fabric> fabric_;
  RequestPtr request_;
};

}  // namespace braid
