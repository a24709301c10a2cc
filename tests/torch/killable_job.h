// A braid-run job that the test can kill whole while it runs, at a moment it recognises in the
// job's output (train_kill_resume_test.cc): every line braid-run forwards is handed to
// `kill_when`, and the first line it accepts makes the test SIGKILL every rank (and its process
// group) and braid-run at once — as a node failure or a preemption without notice would — then
// wait until each of them is gone, so the next job never overlaps the killed one. The output
// decides the moment, never a sleep.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace braid::testing {

struct KillableJobOptions {
  int ranks = 2;
  std::string program;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::function<bool(const std::string& line)> kill_when;  // empty: let the job end by itself
  double timeout_seconds = 120;                              // then the job is killed and timed_out set
};

struct KillableJobResult {
  bool killed = false;     // kill_when accepted a line and the job was killed there
  bool timed_out = false;
  int exit_code = -1;      // braid-run's, when it ended by itself
  int ranks_killed = 0;    // rank processes found and killed
  std::string job_id;      // BRAID_JOB_ID of the killed job (read from a rank's environment)
  std::string kill_line;   // the line that decided the kill
  std::string output;      // everything the job printed, also after the kill line
};

KillableJobResult run_killable_job(const KillableJobOptions& options);

}  // namespace braid::testing
