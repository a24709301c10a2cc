#include "launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

namespace braid::testing {

namespace {

[[noreturn]] void exec_child(const LaunchOptions& options, int out_fd) {
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(out_fd, STDERR_FILENO);
  for (const auto& [key, value] : options.env) ::setenv(key.c_str(), value.c_str(), 1);
  std::vector<std::string> argv_storage{tool_path("braid-run"), "-n", std::to_string(options.ranks)};
  argv_storage.insert(argv_storage.end(), options.braid_run_flags.begin(), options.braid_run_flags.end());
  argv_storage.push_back("--");
  argv_storage.push_back(options.program);
  argv_storage.insert(argv_storage.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (auto& s : argv_storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::fprintf(stderr, "harness: cannot execute %s: %s\n", argv[0], std::strerror(errno));
  ::_exit(127);
}

}  // namespace

std::vector<std::string> LaunchResult::lines_with(const std::string& needle) const {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

ToolResult run_tool(const std::string& tool, const std::string& args) {
  std::string command = tool_path(tool) + " " + args + " 2>&1";
  ToolResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string tool_path(const std::string& name) { return std::string(BRAID_BIN_DIR) + "/" + name; }
std::string test_program_path(const std::string& name) { return std::string(BRAID_TEST_BIN_DIR) + "/" + name; }

LaunchResult launch(const LaunchOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    int out = ::dup(fds[1]);  // dup drops O_CLOEXEC for the exec'd braid-run
    exec_child(options, out);
  }
  ::close(fds[1]);
  LaunchResult result;
  auto deadline = start + std::chrono::duration<double>(options.timeout_seconds);
  char buffer[65536];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);  // braid-run's ranks die with it (PR_SET_PDEATHSIG)
      break;
    }
    pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

std::vector<std::string> shm_leftovers(const std::string& job_id) {
  std::vector<std::string> found;
  std::string prefix = "braid-" + job_id + "-";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  return found;
}

std::vector<std::string> job_ids_in(const LaunchResult& result) {
  std::set<std::string> ids;
  for (const auto& line : result.lines_with("JOBID ")) ids.insert(line.substr(line.find("JOBID ") + 6));
  return {ids.begin(), ids.end()};
}

}  // namespace braid::testing
