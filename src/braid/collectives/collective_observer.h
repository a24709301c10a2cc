// Lets an upper layer watch every collective a communicator runs — the tracer records them on
// its timeline (engine/collective_tracing.h) — without collectives/ knowing who is watching.
//
//   detail::CollectiveAccess(comm).attachment<CollectiveObserver>().set("tracer",
//       [](const CollectiveRecord& r) { ... });
//
// Several watchers may observe one communicator (the tracer and parallel/'s traffic counters),
// each under its own key; they are called in key order.
//
// The callback runs on the thread that ran the collective (the caller's, or the background
// queue's for non-blocking ones), after the algorithm returned or threw. It must be quick and
// must not throw or issue collectives on the same communicator. A communicator nobody watches
// pays one attachment lookup per collective.
//
// Thread-safety: set() and notify() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "braid/base/clock.h"
#include "braid/base/mutex.h"
#include "braid/collectives/collective_args.h"
#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

struct CollectiveRecord {
  OpKind op;
  std::int64_t seq = 0;          // the collective's sequence number on its communicator
  std::string_view algorithm;    // the registry name ("ring", "shm_direct", ...)
  std::uint64_t bytes = 0;       // bytes of the call's count argument (this rank's contribution)
  std::int64_t start_ns = 0;     // braid::now_ns()
  std::int64_t end_ns = 0;
  bool failed = false;           // the algorithm threw (the error still reaches the caller)
};

class CollectiveObserver final : public CommAttachment {
 public:
  using Callback = std::function<void(const CollectiveRecord&)>;
  // Replaces the callback registered under `key`; an empty one stops that watcher.
  void set(std::string_view key, Callback callback) {
    MutexLock lock(mu_);
    if (callback) {
      callbacks_[std::string(key)] = std::move(callback);
    } else {
      callbacks_.erase(std::string(key));
    }
  }
  void notify(const CollectiveRecord& record) const {
    MutexLock lock(mu_);
    for (const auto& [key, callback] : callbacks_) callback(record);
  }

 private:
  mutable Mutex mu_;
  std::map<std::string, Callback, std::less<>> callbacks_ BRAID_GUARDED_BY(mu_);
};

// Runs `run` (an algorithm on `args`) and reports it to the communicator's observer, if any.
template <class Run>
void run_observed(const CollectiveArgs& args, std::string_view algorithm, std::uint64_t bytes, Run&& run) {
  const CollectiveObserver* observer = detail::CollectiveAccess(args.comm).find_attachment<CollectiveObserver>();
  if (observer == nullptr) {
    run();
    return;
  }
  CollectiveRecord record{.op = args.op, .seq = args.seq, .algorithm = algorithm, .bytes = bytes, .start_ns = now_ns()};
  try {
    run();
  } catch (...) {
    record.end_ns = now_ns();
    record.failed = true;
    observer->notify(record);
    throw;
  }
  record.end_ns = now_ns();
  observer->notify(record);
}

}  // namespace braid
