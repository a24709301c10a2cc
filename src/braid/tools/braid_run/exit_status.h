// How a rank process ended, and what braid-run makes of it: the human-readable description
// printed on failure and the exit code braid-run itself returns. Pure functions, no I/O.
#pragma once

#include <string>

namespace braid::launcher {

struct ExitStatus {
  enum class Kind { kExited, kSignaled };
  Kind kind = Kind::kExited;
  int value = 0;  // exit code for kExited, signal number for kSignaled

  static ExitStatus exited(int code) { return {Kind::kExited, code}; }
  static ExitStatus signaled(int signal) { return {Kind::kSignaled, signal}; }

  bool success() const { return kind == Kind::kExited && value == 0; }
  // The shell convention: the exit code itself, or 128 + signal number.
  int shell_code() const { return kind == Kind::kExited ? value : 128 + value; }
  // "exited with code 3" / "was killed by signal 9 (SIGKILL)".
  std::string describe() const;
};

// "SIGKILL" for 9; "signal 64" style fallback for numbers without a name.
std::string signal_name(int signal);

// Decodes the (si_code, si_status) pair waitid() reports for a child that ended.
// REQUIRES: code is CLD_EXITED, CLD_KILLED or CLD_DUMPED.
ExitStatus exit_status_from_child_info(int code, int status);

}  // namespace braid::launcher
