// The shared harness of braid's multi-process tests: runs `braid-run -n N PROGRAM ARGS...`
// as a child process, with extra environment variables, captures everything it prints, and
// enforces a wall-clock limit (a hung job is killed and reported, never left to hang CI).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace braid::testing {

struct LaunchResult {
  int exit_code = -1;     // braid-run's exit status, or -1 if it was killed
  int term_signal = 0;    // the signal that killed braid-run (0 if it exited)
  bool timed_out = false;
  double seconds = 0;
  std::string output;     // stdout and stderr interleaved

  // Lines of the output that contain `needle`.
  std::vector<std::string> lines_with(const std::string& needle) const;
  int count(const std::string& needle) const { return static_cast<int>(lines_with(needle).size()); }
};

struct LaunchOptions {
  int ranks = 2;
  std::vector<std::string> braid_run_flags;   // e.g. {"--grace", "10"}
  std::string program;                        // path of the rank program
  std::vector<std::string> args;
  std::map<std::string, std::string> env;     // added to (or replacing) the test's environment
  double timeout_seconds = 120;
};

LaunchResult launch(const LaunchOptions& options);

// Runs `<bin>/TOOL ARGS 2>&1` through the shell (ARGS is shell syntax) and waits for it: for
// the tests of a single-process tool's command line (braid-trace, braid-plan).
struct ToolResult {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string output;  // stdout and stderr together
};
ToolResult run_tool(const std::string& tool, const std::string& args);

// Path of a tool (bin/) or test program (tests/) of this build.
std::string tool_path(const std::string& name);
std::string test_program_path(const std::string& name);

// /dev/shm entries whose names start with "braid-<job_id>-".
std::vector<std::string> shm_leftovers(const std::string& job_id);
// Job ids the rank programs printed ("JOBID <id>" lines).
std::vector<std::string> job_ids_in(const LaunchResult& result);

}  // namespace braid::testing
