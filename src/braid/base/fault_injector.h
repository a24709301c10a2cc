// Counts one rank's calls and fires the fault of a FaultSpec (fault_spec.h) at the nth call
// of its operation. The process-level faults happen here: kill (SIGKILL to itself), freeze
// (SIGSTOP) and stall (sleep). The faults that need a connection (flip, close) are returned to
// the caller (transport/fabric.h), which arms them on the next frame this rank sends.
//
// Cost when no fault is aimed at this rank: enabled() is a load of a const bool, and callers
// test it inline before anything else (docs/reliability.md#fault-injection measures it).
//
// Thread-safety: on_call may be called from any thread (the user's and a collective queue's
// worker); the count is atomic, so exactly one call is the nth.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "braid/base/fault_spec.h"

namespace braid {

// What the caller must arm after on_call: nothing, or a fault of the next frame it sends.
enum class ArmedFault : std::uint8_t { kNone, kFlip, kClose };

class FaultInjector {
 public:
  FaultInjector() = default;  // injects nothing
  // Injects `spec` if it is aimed at `rank`; otherwise nothing.
  FaultInjector(const std::optional<FaultSpec>& spec, int rank);

  bool enabled() const { return enabled_; }
  const FaultSpec& spec() const { return spec_; }

  // One call of `op` by this rank. At the nth call of the spec's operation: kills or freezes
  // the process, or sleeps, or returns the fault to arm. REQUIRES: enabled().
  ArmedFault on_call(OpKind op);

 private:
  bool enabled_ = false;
  FaultSpec spec_;
  std::atomic<std::int64_t> calls_{0};  // relaxed: only its own value matters, not ordering
};

}  // namespace braid
