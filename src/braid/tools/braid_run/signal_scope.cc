#include "braid/tools/braid_run/signal_scope.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "braid/base/error.h"

namespace braid::launcher {

namespace {

void set_action(int signal, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
}

}  // namespace

SignalScope::SignalScope(std::initializer_list<int> signals) : signals_(signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : signals_) {
    struct sigaction original {};
    ::sigaction(signal, nullptr, &original);
    original_actions_.push_back(original);
    if (signal == SIGCHLD) set_action(SIGCHLD, SIG_DFL);
    sigaddset(&set, signal);
  }
  if (int rc = ::pthread_sigmask(SIG_BLOCK, &set, &original_mask_); rc != 0) {
    throw_system_error({.op = "signals"}, "pthread_sigmask", rc);
  }
  fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd_.valid()) {
    int errnum = errno;
    restore();
    throw_system_error({.op = "signals"}, "signalfd", errnum);
  }
}

SignalScope::~SignalScope() { restore(); }

void SignalScope::restore() {
  // POSIX: setting a pending signal's action to SIG_IGN discards it, blocked or not. Without
  // this, unblocking would deliver e.g. an already handled second SIGTERM with its default
  // (fatal) action.
  for (int signal : signals_) set_action(signal, SIG_IGN);
  ::pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
  for (std::size_t i = 0; i < signals_.size(); ++i) ::sigaction(signals_[i], &original_actions_[i], nullptr);
}

int SignalScope::next_signal() {
  signalfd_siginfo info{};
  while (true) {
    ssize_t n = ::read(fd_.get(), &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    throw_system_error({.op = "signals"}, "read signalfd", n < 0 ? errno : EIO);
  }
}

}  // namespace braid::launcher
