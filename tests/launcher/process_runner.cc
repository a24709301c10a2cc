#include "process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace braid::launcher_testing {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string key_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

std::vector<std::string> child_environment(const std::vector<std::string>& set_env,
                                           const std::vector<std::string>& unset_env) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool drop = false;
    for (const auto& name : unset_env) drop |= key_of(entry) == name;
    for (const auto& set : set_env) drop |= key_of(entry) == key_of(set);
    if (!drop) out.push_back(entry);
  }
  out.insert(out.end(), set_env.begin(), set_env.end());
  return out;
}

std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int shell_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

}  // namespace

RunningProcess::RunningProcess(std::vector<std::string> argv, std::vector<std::string> set_env,
                               std::vector<std::string> unset_env) {
  std::vector<std::string> env = child_environment(set_env, unset_env);
  std::vector<char*> argv_c = c_array(argv);
  std::vector<char*> env_c = c_array(env);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  started_ = Clock::now();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(argv_c[0], argv_c.data(), env_c.data());
    ::_exit(126);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_.reset(out[0]);
  err_.reset(err[0]);
}

RunningProcess::~RunningProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

ProcessResult RunningProcess::wait(std::chrono::duration<double> limit) {
  ProcessResult result;
  const auto deadline = started_ + std::chrono::duration_cast<Clock::duration>(limit);
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  std::array<UniqueFd*, 2> fds{&out_, &err_};
  while (out_.valid() || err_.valid()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    std::array<pollfd, 2> polled{pollfd{out_.get(), POLLIN, 0}, pollfd{err_.get(), POLLIN, 0}};
    if (::poll(polled.data(), polled.size(), static_cast<int>(std::min<long long>(left, 200))) <= 0) continue;
    for (std::size_t i = 0; i < 2; ++i) {
      if (polled[i].revents == 0) continue;
      std::array<char, 4096> buffer;
      ssize_t n = ::read(fds[i]->get(), buffer.data(), buffer.size());
      if (n > 0) sinks[i]->append(buffer.data(), static_cast<std::size_t>(n));
      if (n == 0) fds[i]->reset();
    }
  }
  if (result.timed_out) ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  result.exit_code = shell_code(status);
  result.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  return result;
}

std::string braid_run_path() { return std::string(BRAID_BIN_DIR) + "/braid-run"; }

ProcessResult run_braid(std::vector<std::string> args, std::vector<std::string> set_env,
                        std::vector<std::string> unset_env) {
  args.insert(args.begin(), braid_run_path());
  RunningProcess process(std::move(args), std::move(set_env), std::move(unset_env));
  return process.wait();
}

bool process_running(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  if (!(stat >> pid_field >> comm >> state)) return false;  // gone between the two checks
  return state != "Z" && state != "X";
}

bool wait_until_gone(pid_t pid, std::chrono::duration<double> limit) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit);
  while (process_running(pid)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/braid-launcher-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

static std::vector<fs::path> files_with_suffix(const std::string& directory, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().ends_with(suffix)) out.push_back(it->path());
  }
  return out;
}

bool wait_for_files(const std::string& directory, const std::string& suffix, std::size_t count,
                    std::chrono::duration<double> limit) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit);
  while (files_with_suffix(directory, suffix).size() < count) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<pid_t> read_pids(const std::string& directory, const std::string& suffix) {
  std::vector<pid_t> pids;
  for (const fs::path& file : files_with_suffix(directory, suffix)) {
    std::ifstream in(file);
    pid_t pid = 0;
    if (in >> pid && pid > 0) pids.push_back(pid);
  }
  return pids;
}

}  // namespace braid::launcher_testing
