#include "killable_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "launch.h"

namespace braid::testing {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void exec_braid_run(const KillableJobOptions& options, int out_fd) {
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(out_fd, STDERR_FILENO);
  for (const auto& [key, value] : options.env) ::setenv(key.c_str(), value.c_str(), 1);
  std::vector<std::string> words{tool_path("braid-run"), "-n", std::to_string(options.ranks), "--", options.program};
  words.insert(words.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::fprintf(stderr, "killable_job: cannot execute %s: %s\n", argv[0], std::strerror(errno));
  ::_exit(127);
}

// The processes whose parent is `parent` (braid-run's ranks), from /proc/<pid>/stat.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code error;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator("/proc", error)) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;  // not a process
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    std::size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      children.push_back(static_cast<pid_t>(std::stoi(name)));
    }
  }
  return children;
}

// BRAID_JOB_ID in the environment of process `pid` ("" if unreadable).
std::string job_id_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(in)), {});
  const std::string key = "BRAID_JOB_ID=";
  for (std::size_t at = 0; at < env.size(); at = env.find('\0', at) + 1) {
    if (env.compare(at, key.size(), key) == 0) return env.substr(at + key.size(), env.find('\0', at) - at - key.size());
    if (env.find('\0', at) == std::string::npos) break;
  }
  return "";
}

// SIGKILLs every rank (and its process group: braid-run gives each rank its own) and braid-run
// together, then blocks until each rank has exited (a pidfd polls readable on exit).
void kill_job(pid_t braid_run, KillableJobResult& result) {
  std::vector<pid_t> ranks = children_of(braid_run);
  std::vector<pollfd> exits;
  for (pid_t rank : ranks) {
    if (result.job_id.empty()) result.job_id = job_id_of(rank);
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, rank, 0));
    if (fd >= 0) exits.push_back({.fd = fd, .events = POLLIN, .revents = 0});
  }
  for (pid_t rank : ranks) {
    ::kill(-rank, SIGKILL);
    ::kill(rank, SIGKILL);
  }
  ::kill(braid_run, SIGKILL);
  result.ranks_killed = static_cast<int>(ranks.size());
  for (pollfd& p : exits) {
    while (::poll(&p, 1, 60'000) < 0 && errno == EINTR) {
    }
    ::close(p.fd);
  }
}

}  // namespace

KillableJobResult run_killable_job(const KillableJobOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    exec_braid_run(options, ::dup(fds[1]));  // dup drops O_CLOEXEC for braid-run
  }
  ::close(fds[1]);
  KillableJobResult result;
  auto deadline = Clock::now() + std::chrono::duration<double>(options.timeout_seconds);
  std::string pending;  // the part of the output after the last complete line
  bool stopped = false;
  char buffer[65536];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 && !stopped) {
      result.timed_out = true;
      kill_job(pid, result);
      stopped = true;
    }
    pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, static_cast<int>(std::clamp<long long>(left, 100, 1000))) <= 0) continue;
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
    pending.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t end; !stopped && (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
      std::string line = pending.substr(0, end);
      if (options.kill_when && options.kill_when(line)) {
        result.kill_line = line;
        result.killed = true;
        kill_job(pid, result);
        stopped = true;
      }
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!stopped && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace braid::testing
