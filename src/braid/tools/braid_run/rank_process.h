// One rank: a child process running the user's program, leader of its own process group.
//
// Why a process group per rank: braid-run can then signal everything a rank started (a shell
// script's children, a data loader's workers) with one kill(-pgid), and Ctrl-C in a terminal
// reaches braid-run alone, which decides how the ranks stop (SIGTERM, grace, SIGKILL).
// Why PR_SET_PDEATHSIG: if braid-run itself is SIGKILLed it cannot clean up, and the kernel
// then kills the ranks for it instead of leaving them orphaned.
//
// Thread-safety: none; braid-run drives all ranks from its one thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/base/unique_fd.h"
#include "braid/tools/braid_run/exit_status.h"

namespace braid::launcher {

// How to start one rank.
struct RankLaunch {
  int rank = 0;
  std::vector<std::string> argv;         // argv[0] is looked up in PATH (execvp rules)
  std::vector<std::string> environment;  // the complete environment, "KEY=VALUE"
  bool capture_output = true;            // stdout/stderr into pipes, else inherited as they are
  sigset_t signal_mask{};                // the mask the program starts with
  int cpu = -1;                          // the one CPU it may run on (sched_setaffinity); -1: any
};

// The program could not be executed (reported by the child over a close-on-exec pipe, so the
// parent can tell "exec failed" from "the program ran and exited 127").
class ExecError : public SystemError {
 public:
  ExecError(std::string program, int errnum);
  int errnum() const { return errnum_; }
  // The shell's convention: 127 when the program was not found, 126 when it was not runnable.
  int exit_code() const;

 private:
  int errnum_;
};

class RankProcess {
 public:
  // Forks and executes the rank. Returns once the program has been exec'd.
  // Throws ExecError if it could not be, SystemError if fork or a pipe failed.
  static RankProcess spawn(const RankLaunch& launch);

  // A rank still running (or not yet reaped) when its owner goes away is killed, group and
  // all, with SIGKILL and reaped: no path out of braid-run leaves a rank behind.
  ~RankProcess();
  RankProcess(RankProcess&& other) noexcept;
  RankProcess& operator=(RankProcess&& other) noexcept;
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  int rank() const { return rank_; }
  pid_t pid() const { return pid_; }
  // The read ends of the rank's stdout / stderr pipes; invalid when output is not captured.
  UniqueFd take_stdout() { return std::move(stdout_); }
  UniqueFd take_stderr() { return std::move(stderr_); }

  // How the rank ended, once it has; never blocks. The rank is observed but not reaped: its
  // zombie keeps the pid, hence the process-group id, reserved, so a later kill(-pgid) can
  // only reach this rank's group, never a stranger that was given a recycled id.
  std::optional<ExitStatus> poll_exit();
  bool ended() const { return status_.has_value(); }
  const std::optional<ExitStatus>& status() const { return status_; }

  // Sends `signal` to every process of the rank's group (the leader too, should it have
  // moved to another group). No effect once reaped.
  void signal_group(int signal);
  // SIGKILLs what is left of the group, waits for the leader and reaps it.
  void kill_and_reap();

 private:
  RankProcess(int rank, pid_t pid, UniqueFd out, UniqueFd err);

  int rank_ = -1;
  pid_t pid_ = -1;  // -1 once reaped (or moved from)
  std::optional<ExitStatus> status_;
  UniqueFd stdout_;
  UniqueFd stderr_;
};

}  // namespace braid::launcher
