#include "braid/transport/peer_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace braid {

namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// Fallback without pidfds: gone, or a zombie nobody has reaped yet.
bool exited_by_proc(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close_paren = text.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < text.size() && text[close_paren + 2] == 'Z';
}

}  // namespace

PeerProcess::PeerProcess(pid_t pid) : pid_(pid), pidfd_(open_pidfd(pid)) {}

bool PeerProcess::exited() const {
  if (pid_ <= 0) return false;
  if (!pidfd_.valid()) return exited_by_proc(pid_);
  pollfd p{.fd = pidfd_.get(), .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace braid
