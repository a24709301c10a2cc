#include "braid/tools/braid_run/exit_status.h"

#include <csignal>
#include <cstring>  // sigabbrev_np

#include <fmt/format.h>

namespace braid::launcher {

std::string signal_name(int signal) {
  // sigabbrev_np (glibc >= 2.32) is thread-safe and locale-independent, unlike strsignal.
  if (const char* abbrev = ::sigabbrev_np(signal)) return fmt::format("SIG{}", abbrev);
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) return fmt::format("SIGRTMIN+{}", signal - SIGRTMIN);
  return "unknown signal";
}

std::string ExitStatus::describe() const {
  if (kind == Kind::kExited) return fmt::format("exited with code {}", value);
  return fmt::format("was killed by signal {} ({})", value, signal_name(value));
}

ExitStatus exit_status_from_child_info(int code, int status) {
  if (code == CLD_EXITED) return ExitStatus::exited(status);
  return ExitStatus::signaled(status);  // CLD_KILLED or CLD_DUMPED
}

}  // namespace braid::launcher
