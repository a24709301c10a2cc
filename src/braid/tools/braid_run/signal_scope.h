// Delivers signals to braid-run's poll loop as readable events on a signalfd, so that SIGINT,
// SIGTERM and SIGCHLD are handled in ordinary code: no signal handlers, no async-signal-safety
// constraints, and no global self-pipe fd.
//
// Thread-safety: construct, use and destroy on one thread. signalfd only sees signals blocked
// in every thread, so the process must not have other threads that leave them unblocked;
// braid-run is single-threaded.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <vector>

#include "braid/base/unique_fd.h"

namespace braid::launcher {

class SignalScope {
 public:
  // Blocks `signals` and routes them to fd(). SIGCHLD, when listed, is set to its default
  // disposition first: an inherited SIG_IGN would make the kernel reap children silently.
  explicit SignalScope(std::initializer_list<int> signals);
  // Discards the signals still pending (they were the launcher's to handle), then restores
  // the mask and the dispositions braid-run started with.
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int fd() const { return fd_.get(); }
  // The next pending signal's number, or 0 when none is pending (never blocks).
  int next_signal();
  // The mask braid-run started with: what the rank programs must start with, since a blocked
  // mask survives exec.
  const sigset_t& original_mask() const { return original_mask_; }

 private:
  void restore();

  std::vector<int> signals_;
  std::vector<struct sigaction> original_actions_;
  sigset_t original_mask_{};
  UniqueFd fd_;
};

}  // namespace braid::launcher
