// braid-run's command line, parsed into a plain struct. Parsing is separate from running so
// the tests can check every flag and every usage error without starting a process.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "braid/tools/braid_run/cpu_binding.h"
#include "braid/tools/braid_run/node_options.h"

namespace braid::launcher {

struct LauncherOptions {
  // -n: how many rank processes to start. Required; at least 1.
  int num_ranks = 0;
  // --master-addr: where ranks find rank 0's rendezvous store. Loopback by default, so a
  // single-host job never listens on a network interface (DESIGN.md, Security).
  std::string master_addr = "127.0.0.1";
  // --master-port: the store's TCP port; 0 (the default) lets braid-run pick a free one.
  int master_port = 0;
  // --grace: seconds between SIGTERM and SIGKILL when braid-run stops ranks. Long enough
  // for a rank to flush logs and unlink its files; short enough that Ctrl-C feels prompt.
  double grace_seconds = 5.0;
  // --timeout: wall-clock limit of the whole job in seconds; unset means none.
  std::optional<double> timeout_seconds;
  // --no-prefix clears it: ranks then write straight to braid-run's stdout / stderr.
  bool prefix_output = true;
  // --env KEY=VALUE (repeatable): added to every rank's environment, later ones win.
  std::vector<std::string> extra_env;
  // --elastic: a rank that dies does not stop the job; braid-run serves the store itself (it
  // must outlive every rank), tells the survivors who died (bootstrap/membership.h) and lets them
  // continue (docs/reliability.md#elastic-recovery).
  bool elastic = false;
  // --min-ranks (with --elastic): the job fails once fewer ranks are left running.
  int min_ranks = 1;
  // --max-restarts (with --elastic): how many times in the job braid-run starts a lost rank's
  // program again, as a newcomer with a fresh member id that rejoins at a step boundary.
  int max_restarts = 0;
  // --bind-to: which CPU each rank runs on (cpu_binding.h): by default one rank per CPU of
  // braid-run's affinity mask when the ranks of this node do not outnumber them.
  BindPolicy bind = BindPolicy::kAuto;
  // --nnodes, --node-rank, --token-file...: a job across nodes (node_options.h).
  NodeOptions nodes;
  // PROG ARGS...: PROG is looked up in PATH.
  std::vector<std::string> command;
};

// What parsing decided: either run the job with `options`, or exit at once with `exit_code`
// after printing `out` (--help) to stdout and `err` (a usage error) to stderr.
struct ParseOutcome {
  std::optional<LauncherOptions> options;
  int exit_code = 0;
  std::string out;
  std::string err;
};

// Exit code for command-line mistakes (as argparse, hence torchrun, uses).
inline constexpr int kUsageExitCode = 2;

// Parses braid-run's arguments; `args` excludes argv[0].
ParseOutcome parse_launcher_options(std::span<const std::string> args);

// The first semantic problem with `options` ("" when there is none): the checks CLI11's
// syntax cannot express, such as the --env variables braid-run reserves for itself.
std::string validate_launcher_options(const LauncherOptions& options);

// File descriptors braid-run itself needs for a job of `options`: the read ends of each rank's
// stdout and stderr pipes while it prefixes output (none with --no-prefix), plus a reserve for
// its own (standard streams, signalfd, and the seven a spawn holds for a moment).
std::uint64_t descriptors_needed(const LauncherOptions& options);

// "" when `soft_limit` (RLIMIT_NOFILE) covers descriptors_needed(options); otherwise why not,
// naming -n, the need and the limit, and the fix (`ulimit -n`, within `hard_limit`). Checked
// before any rank starts: running out of descriptors half-way through -n 10000 spawns took
// 15 s to fail, and left the job half started.
std::string check_descriptor_limit(const LauncherOptions& options, std::uint64_t soft_limit, std::uint64_t hard_limit);

}  // namespace braid::launcher
