// Runs one job on this host: starts the ranks, forwards their output, and decides when and
// how they stop. The policy (docs/launcher.md has the long version):
//
//  - A rank that exits non-zero or dies by a signal fails the job: braid-run names it on
//    stderr and stops the others. Its exit code becomes braid-run's (128+N for signal N).
//  - SIGINT / SIGTERM / SIGHUP to braid-run stop the job; the exit code is 128+signal.
//    A second one while stopping skips the rest of the grace period.
//  - --timeout stops the job with exit code 124.
//  - Stopping means SIGTERM to every rank's process group, then SIGKILL to whatever is left
//    after --grace seconds. Only the first reason to stop is reported and decides the code.
//  - When every rank has ended, whatever they left in their process groups is SIGKILLed,
//    and on every way out the job's /dev/shm/braid-<job id>-* segments are removed.
//  - With --nnodes > 1 this is one node of a job: the nodes meet first (node_rendezvous.h),
//    every reason to stop above is told to the other nodes, and a failure told by another
//    node (or a node or store lost: node_watch.h) stops this node's ranks with its exit code.
//
// Thread-safety: run_job blocks SIGINT, SIGTERM, SIGHUP, SIGCHLD and SIGPIPE on the calling
// thread and reads them from a signalfd; call it from the main thread of a single-threaded
// process (braid-run's main).
#pragma once

#include "braid/tools/braid_run/launcher_options.h"

namespace braid::launcher {

// Exit code when --timeout expires (as coreutils timeout(1)).
inline constexpr int kTimeoutExitCode = 124;

// Runs the job to its end and returns braid-run's exit code. Throws ExecError when PROG
// cannot be executed, braid::Error when the job cannot be set up; ranks already started
// are killed and shared memory removed before the exception leaves.
int run_job(const LauncherOptions& options);

}  // namespace braid::launcher
