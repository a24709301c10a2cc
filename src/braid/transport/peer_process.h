// Watches whether a peer process on this host is still alive, through a pidfd (readable once
// the process has exited, even before it is reaped). Used by the shared-memory transport,
// where no socket closes to tell that a peer died.
#pragma once

#include <sys/types.h>

#include "braid/base/unique_fd.h"

namespace braid {

class PeerProcess {
 public:
  PeerProcess() = default;
  explicit PeerProcess(pid_t pid);

  pid_t pid() const { return pid_; }
  // Cheap (one poll(2) with zero timeout, or kill(pid, 0) where pidfds are unavailable).
  bool exited() const;

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
};

}  // namespace braid
