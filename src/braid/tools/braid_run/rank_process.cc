#include "braid/tools/braid_run/rank_process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace braid::launcher {

namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// Close-on-exec on both ends: a rank must not inherit another rank's pipes, or the reader
// would not see EOF until every rank had exited.
Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_system_error({.op = "spawn"}, "pipe2", errno);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// What the child reports over the close-on-exec pipe when it cannot run the program.
struct ChildFailure {
  enum Stage : int { kSetup = 1, kExec = 2 };
  int stage = 0;
  int errnum = 0;
};

// Everything the child needs, prepared before fork(): between fork and exec the child only
// makes async-signal-safe system calls and allocates nothing.
struct ChildPlan {
  char* const* argv;
  char* const* envp;
  int stdin_fd;
  int stdout_fd;  // -1: keep braid-run's
  int stderr_fd;  // -1: keep braid-run's
  int report_fd;
  pid_t parent;
  const sigset_t* mask;
  const cpu_set_t* affinity;  // null: inherit braid-run's
};

[[noreturn]] void report_and_exit(int report_fd, int stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = ::write(report_fd, &failure, sizeof failure);
  (void)ignored;  // nothing more a failing child can do
  ::_exit(127);
}

[[noreturn]] void run_child(const ChildPlan& plan) {
  // Own group first, so that a kill(-pgid) from braid-run covers the rank from now on.
  ::setpgid(0, 0);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) report_and_exit(plan.report_fd, ChildFailure::kSetup);
  // braid-run may have died before prctl took effect; the death signal would then never come.
  if (::getppid() != plan.parent) ::_exit(127);
  if (::dup2(plan.stdin_fd, STDIN_FILENO) < 0) report_and_exit(plan.report_fd, ChildFailure::kSetup);
  if (plan.stdout_fd >= 0 && ::dup2(plan.stdout_fd, STDOUT_FILENO) < 0) {
    report_and_exit(plan.report_fd, ChildFailure::kSetup);
  }
  if (plan.stderr_fd >= 0 && ::dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
    report_and_exit(plan.report_fd, ChildFailure::kSetup);
  }
  if (plan.affinity != nullptr && ::sched_setaffinity(0, sizeof *plan.affinity, plan.affinity) != 0) {
    report_and_exit(plan.report_fd, ChildFailure::kSetup);
  }
  // braid-run blocks the signals it handles; a blocked mask would survive exec.
  ::sigprocmask(SIG_SETMASK, plan.mask, nullptr);
  ::execvpe(plan.argv[0], plan.argv, plan.envp);
  report_and_exit(plan.report_fd, ChildFailure::kExec);
}

// NULL-terminated pointers into `strings`, which must outlive the result.
std::vector<char*> c_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Blocks until the child has exec'd (EOF: the close-on-exec write end went away) or reported
// why it could not.
std::optional<ChildFailure> read_child_report(int fd) {
  ChildFailure failure;
  ssize_t n;
  do {
    n = ::read(fd, &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) return failure;
  return std::nullopt;
}

void reap_blocking(pid_t pid, int* wait_status) {
  while (::waitpid(pid, wait_status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

ExecError::ExecError(std::string program, int errnum)
    : SystemError({.op = "exec"}, fmt::format("cannot execute '{}': {}", program, std::strerror(errnum))),
      errnum_(errnum) {}

int ExecError::exit_code() const { return errnum_ == ENOENT ? 127 : 126; }

RankProcess RankProcess::spawn(const RankLaunch& launch) {
  std::vector<char*> argv = c_array(launch.argv);
  std::vector<char*> envp = c_array(launch.environment);
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid()) throw_system_error({.op = "spawn"}, "open /dev/null", errno);
  Pipe report = make_pipe();
  Pipe out, err;
  if (launch.capture_output) {
    out = make_pipe();
    err = make_pipe();
  }
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  if (launch.cpu >= 0) CPU_SET(launch.cpu, &affinity);
  ChildPlan plan{.argv = argv.data(),
                 .envp = envp.data(),
                 .stdin_fd = dev_null.get(),
                 .stdout_fd = out.write.get(),
                 .stderr_fd = err.write.get(),
                 .report_fd = report.write.get(),
                 .parent = ::getpid(),
                 .mask = &launch.signal_mask,
                 .affinity = launch.cpu >= 0 ? &affinity : nullptr};

  pid_t pid = ::fork();
  if (pid < 0) throw_system_error({.rank = launch.rank, .op = "spawn"}, "fork", errno);
  if (pid == 0) run_child(plan);

  // Both sides set the group, so it exists whichever runs first (the classic job-control
  // idiom). EACCES here just means the child has already exec'd, after doing it itself.
  ::setpgid(pid, pid);
  // The parent's copies of the child's ends must go, or EOF would never come.
  report.write.reset();
  out.write.reset();
  err.write.reset();
  if (std::optional<ChildFailure> failure = read_child_report(report.read.get())) {
    reap_blocking(pid, nullptr);
    if (failure->stage == ChildFailure::kExec) throw ExecError(launch.argv.at(0), failure->errnum);
    throw_system_error({.rank = launch.rank, .op = "spawn"}, "setting up the rank process", failure->errnum);
  }
  return RankProcess(launch.rank, pid, std::move(out.read), std::move(err.read));
}

RankProcess::RankProcess(int rank, pid_t pid, UniqueFd out, UniqueFd err)
    : rank_(rank), pid_(pid), stdout_(std::move(out)), stderr_(std::move(err)) {}

RankProcess::~RankProcess() { kill_and_reap(); }

RankProcess::RankProcess(RankProcess&& other) noexcept
    : rank_(other.rank_),
      pid_(std::exchange(other.pid_, -1)),
      status_(std::move(other.status_)),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)) {}

RankProcess& RankProcess::operator=(RankProcess&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    rank_ = other.rank_;
    pid_ = std::exchange(other.pid_, -1);
    status_ = std::move(other.status_);
    stdout_ = std::move(other.stdout_);
    stderr_ = std::move(other.stderr_);
  }
  return *this;
}

std::optional<ExitStatus> RankProcess::poll_exit() {
  if (status_ || pid_ < 0) return status_;
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) throw_system_error({.rank = rank_, .op = "waitid"}, "waitid", errno);
  }
  if (info.si_pid == 0) return std::nullopt;  // still running
  status_ = exit_status_from_child_info(info.si_code, info.si_status);
  return status_;
}

void RankProcess::signal_group(int signal) {
  if (pid_ < 0) return;
  ::kill(-pid_, signal);  // ESRCH once the group is empty: nothing left to stop
  if (::getpgid(pid_) != pid_) ::kill(pid_, signal);
}

void RankProcess::kill_and_reap() {
  if (pid_ < 0) return;
  signal_group(SIGKILL);
  int wait_status = 0;
  reap_blocking(pid_, &wait_status);
  if (!status_) {
    status_ = WIFSIGNALED(wait_status) ? ExitStatus::signaled(WTERMSIG(wait_status))
                                       : ExitStatus::exited(WEXITSTATUS(wait_status));
  }
  pid_ = -1;
}

}  // namespace braid::launcher
