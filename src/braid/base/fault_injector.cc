#include "braid/base/fault_injector.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "braid/base/log.h"

namespace braid {

FaultInjector::FaultInjector(const std::optional<FaultSpec>& spec, int rank)
    : enabled_(spec.has_value() && spec->rank == rank), spec_(spec.value_or(FaultSpec{})) {}

ArmedFault FaultInjector::on_call(OpKind op) {
  if (op != spec_.op) return ArmedFault::kNone;
  if (calls_.fetch_add(1, std::memory_order_relaxed) + 1 != spec_.nth) return ArmedFault::kNone;
  // Said before acting, so the job's output names the victim even when the process is gone.
  log::error("rank {}: injected fault {} (BRAID_FAULT={})", spec_.rank, fault_kind_name(spec_), describe(spec_));
  switch (spec_.kind) {
    case FaultKind::kKill: ::kill(::getpid(), SIGKILL); break;
    case FaultKind::kFreeze: ::kill(::getpid(), SIGSTOP); break;  // returns if someone sends SIGCONT
    case FaultKind::kStall: std::this_thread::sleep_for(std::chrono::duration<double>(spec_.stall_seconds)); break;
    case FaultKind::kFlip: return ArmedFault::kFlip;
    case FaultKind::kClose: return ArmedFault::kClose;
  }
  return ArmedFault::kNone;
}

}  // namespace braid
