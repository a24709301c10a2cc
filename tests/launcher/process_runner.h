// Runs braid-run (or any program) as a child of the test, capturing its stdout and stderr,
// so the end-to-end tests can check exit codes, messages and timing from the outside, as a
// user's shell would see them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "braid/base/unique_fd.h"

namespace braid::launcher_testing {

struct ProcessResult {
  int exit_code = -1;  // shell convention: the code, or 128 + signal
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;  // from start() to exit
};

class RunningProcess {
 public:
  // Starts `argv` (argv[0] an absolute path) with the test's environment plus `set_env`
  // ("KEY=VALUE") minus `unset_env`.
  RunningProcess(std::vector<std::string> argv, std::vector<std::string> set_env = {},
                 std::vector<std::string> unset_env = {});
  ~RunningProcess();  // SIGKILLs and reaps a process the test did not wait for
  RunningProcess(const RunningProcess&) = delete;
  RunningProcess& operator=(const RunningProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Collects all output and the exit status. If the process runs past `limit`, it is
  // SIGKILLed and timed_out is set: a hung launcher fails the test instead of hanging it.
  ProcessResult wait(std::chrono::duration<double> limit = std::chrono::seconds(30));

 private:
  pid_t pid_ = -1;
  UniqueFd out_;
  UniqueFd err_;
  std::chrono::steady_clock::time_point started_;
};

// Path of the braid-run binary under test.
std::string braid_run_path();

// Runs braid-run with `args` to completion.
ProcessResult run_braid(std::vector<std::string> args, std::vector<std::string> set_env = {},
                        std::vector<std::string> unset_env = {});

// True while `pid` exists and is not a zombie. (In containers whose init never reaps, a
// killed orphan stays a zombie forever; it runs nothing and holds nothing but its pid.)
bool process_running(pid_t pid);
// Waits up to `limit` for `pid` to stop running; returns whether it did.
bool wait_until_gone(pid_t pid, std::chrono::duration<double> limit = std::chrono::seconds(5));

// Splits text into lines (without the '\n').
std::vector<std::string> lines_of(const std::string& text);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Waits up to `limit` until `directory` holds at least `count` files named *`suffix`.
bool wait_for_files(const std::string& directory, const std::string& suffix, std::size_t count,
                    std::chrono::duration<double> limit = std::chrono::seconds(20));
// The integers stored in the files named *`suffix` in `directory` (pid files).
std::vector<pid_t> read_pids(const std::string& directory, const std::string& suffix);

}  // namespace braid::launcher_testing
