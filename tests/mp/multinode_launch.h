// One multi-node braid-run per emulated host (docs/multinode.md): the two braid-runs of a job
// across TwoEmulatedHosts, their results, and the checks that a failed job left nothing
// behind. Shared by multinode_test.cc and netem_test.cc.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "emulated_hosts.h"
#include "launch.h"
#include "process_runner.h"

namespace braid::testing {

using launcher_testing::ProcessResult;
using launcher_testing::RunningProcess;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kToken = "multinode-test-token-0123456789";
inline constexpr const char* kPort = "29640";  // fresh namespaces: nothing else listens there
// Variables of an outer job that must not steer these braid-runs.
inline const std::vector<std::string> kOuterJob{"BRAID_RANK",   "BRAID_WORLD_SIZE", "BRAID_MASTER_ADDR",
                                                "BRAID_MASTER_PORT", "BRAID_JOB_ID", "BRAID_JOB_TOKEN",
                                                "RANK",         "WORLD_SIZE"};

// braid-run for node `node` inside its namespace (`ip netns exec` execs: the pid is braid-run's).
inline std::vector<std::string> node_command(const TwoEmulatedHosts& hosts, int node, int ranks_per_node,
                                             const std::vector<std::string>& flags,
                                             const std::vector<std::string>& program) {
  std::vector<std::string> argv{"/bin/sh", "-c", "exec ip netns exec \"$0\" \"$@\"", hosts.ns(node),
                                launcher_testing::braid_run_path(), "--nnodes", "2", "--node-rank",
                                std::to_string(node), "--master-addr", TwoEmulatedHosts::address(0),
                                "--master-port", kPort, "--nproc-per-node", std::to_string(ranks_per_node), "--env",
                                "BRAID_HOST_ID=host" + std::to_string(node)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

struct TwoNodes {
  std::unique_ptr<RunningProcess> node[2];
  ProcessResult result[2];

  Clock::time_point started = Clock::now();

  // `node1_env` is added to node 1's environment only (a wrong token, say); `both_env` to both.
  TwoNodes(const TwoEmulatedHosts& hosts, const std::vector<std::string>& flags, const std::vector<std::string>& program,
           const std::vector<std::string>& node1_env = {}, int ranks_per_node = 2,
           const std::vector<std::string>& both_env = {"BRAID_TIMEOUT=60"}) {
    std::vector<std::string> common{std::string("BRAID_JOB_TOKEN=") + kToken};
    common.insert(common.end(), both_env.begin(), both_env.end());
    for (int i : {1, 0}) {
      std::vector<std::string> set = common;
      if (i == 1) set.insert(set.end(), node1_env.begin(), node1_env.end());
      node[i] = std::make_unique<RunningProcess>(node_command(hosts, i, ranks_per_node, flags, program), set, kOuterJob);
    }
  }
  double seconds_since_start() const { return std::chrono::duration<double>(Clock::now() - started).count(); }
  void wait(double limit_seconds) {
    for (int i : {0, 1}) result[i] = node[i]->wait(std::chrono::duration<double>(limit_seconds));
  }
  std::string output() const {
    std::string out;
    for (int i : {0, 1}) out += "--- node " + std::to_string(i) + ":\n" + result[i].out + result[i].err;
    return out;
  }
};

// Runs PROGRAM ARGS on both nodes to their end; a failure is recorded when either braid-run
// timed out (fatal) or exited non-zero.
inline TwoNodes run_to_success(const TwoEmulatedHosts& hosts, const std::string& program,
                               const std::vector<std::string>& args, double limit_seconds, int ranks_per_node = 2,
                               const std::vector<std::string>& both_env = {"BRAID_TIMEOUT=60"}) {
  std::vector<std::string> command{program};
  command.insert(command.end(), args.begin(), args.end());
  TwoNodes nodes(hosts, {}, command, {}, ranks_per_node, both_env);
  nodes.wait(limit_seconds);
  for (int i : {0, 1}) {
    if (nodes.result[i].timed_out) ADD_FAILURE() << "node " << i << " timed out:\n" << nodes.output();
    EXPECT_EQ(nodes.result[i].exit_code, 0) << nodes.output();
  }
  return nodes;
}

// The braid-test-rank processes running in `host`'s namespace.
inline std::vector<pid_t> rank_pids(const TwoEmulatedHosts& hosts, int host) {
  std::vector<pid_t> pids;
  FILE* p = ::popen(("ip netns pids " + hosts.ns(host)).c_str(), "r");
  if (p == nullptr) return pids;
  int pid = 0;
  while (std::fscanf(p, "%d", &pid) == 1) {
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv0;
    std::getline(cmdline, argv0, '\0');
    if (argv0.find("braid-test-rank") != std::string::npos) pids.push_back(pid);
  }
  ::pclose(p);
  return pids;
}

inline bool eventually(const std::function<bool()>& condition, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// After a job ended: no process left in either namespace (within 10 s), nothing left in
// /dev/shm under any node's job id (each braid-run prints "JOBID <id>").
inline void expect_nothing_left(const TwoEmulatedHosts& hosts, const TwoNodes& nodes) {
  for (int h : {0, 1}) {
    EXPECT_TRUE(eventually([&] { return !hosts.has_processes(h); }, 10)) << "processes left on host " << h;
  }
  for (int i : {0, 1}) {
    for (const std::string& line : launcher_testing::lines_of(nodes.result[i].out)) {
      const auto at = line.find("JOBID ");
      if (at != std::string::npos) {
        EXPECT_TRUE(shm_leftovers(line.substr(at + 6)).empty()) << line;
      }
    }
  }
}

}  // namespace braid::testing
