// Open MPI's mpirun across two emulated hosts (docs/multinode.md, "mpirun"): network namespaces
// joined by a veth pair (emulated_hosts.h, as multinode_test builds them), mpirun started in
// host 0, which reaches host 1 through netns_agent.sh in place of ssh; the hostfile names the
// namespaces. braid forms the job from Open MPI's variables alone (rank, size, local rank and
// size; hosts told apart by their host names) plus what `-x` exports: the store address and the
// job token.
//   - the allreduce grid of the collectives bit for bit against the reference, 2 hosts x 2 ranks;
//   - braid-train, one rank per host: the same final parameters as one braid-run emulating the
//     same two hosts (same seed, data and algorithms: bitwise equal);
//   - a rank killed: mpirun exits non-zero and the survivors name the lost peer;
//   - braid::mpi::from_mpi on one host and across the two: braid's allreduce equals
//     MPI_Allreduce bit for bit, split communicators, MPI_COMM_NULL and MPI not initialised,
//     and rank 0 failing to start the store fails every rank at once.
// The namespace tests skip without root (or `ip netns`).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "emulated_hosts.h"
#include "launch.h"
#include "process_runner.h"
#include "two_host_train_reference.h"

namespace braid::testing {
namespace {

using launcher_testing::ProcessResult;
using launcher_testing::RunningProcess;
using launcher_testing::TempDir;

constexpr const char* kToken = "mpirun-test-token-0123456789abcd";
constexpr const char* kPort = "29660";  // fresh namespaces: nothing else listens there
constexpr const char* kSubnet = "10.77.0.0/24";
// Variables of an outer job that must not steer these mpiruns (mpirun copies its environment
// to the ranks on its own host).
const std::vector<std::string> kOuterJob{"BRAID_RANK",     "BRAID_WORLD_SIZE", "BRAID_LOCAL_RANK", "BRAID_LOCAL_WORLD_SIZE",
                                         "BRAID_JOB_ID",   "BRAID_HOST_ID",    "RANK",             "WORLD_SIZE",
                                         "MASTER_ADDR",    "MASTER_PORT",      "BRAID_FAULT"};

// `mpirun` with what every run here needs: root is allowed (CI runs as root), and 4 ranks may
// share 2 cores (--oversubscribe; braid never busy-waits, Open MPI's own progress loop is told
// to yield by oversubscription too).
std::vector<std::string> mpirun_base(int ranks) {
  std::vector<std::string> argv{BRAID_MPIRUN, "--oversubscribe", "-n", std::to_string(ranks)};
  if (::geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
  return argv;
}

struct MpirunResult {
  ProcessResult process;
  std::string output() const { return process.out + process.err; }
};

MpirunResult run(std::vector<std::string> argv, std::vector<std::string> env, double limit_seconds,
                 std::vector<std::string> unset = kOuterJob) {
  RunningProcess mpirun(std::move(argv), std::move(env), std::move(unset));
  MpirunResult result{mpirun.wait(std::chrono::duration<double>(limit_seconds))};
  EXPECT_FALSE(result.process.timed_out) << "mpirun ran past " << limit_seconds << " s:\n" << result.output();
  return result;
}

class MpirunAcrossHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_netns()) GTEST_SKIP() << "needs root and ip netns to build the emulated hosts";
    hosts_ = std::make_unique<TwoEmulatedHosts>("bmp");
    ASSERT_TRUE(hosts_->ok()) << "could not build the network namespaces";
  }

  // mpirun in host 0 over both hosts, `slots` ranks on each (by slot: ranks 0..slots-1 on host 0).
  // braid's store is rank 0's, at host 0's address: exported with -x, as the token (unless
  // `export_store` is false: from_mpi needs neither). `env` ("KEY=VALUE") is exported too.
  MpirunResult run_across(int slots, const std::vector<std::string>& program, std::vector<std::string> env = {},
                          double limit_seconds = 60, bool export_store = true) {
    const std::string hostfile = dir_.path() + "/hosts";
    std::ofstream(hostfile) << hosts_->ns(0) << " slots=" << slots << "\n" << hosts_->ns(1) << " slots=" << slots << "\n";
    std::vector<std::string> argv{"/bin/sh", "-c", "exec ip netns exec \"$0\" \"$@\"", hosts_->ns(0)};
    const std::vector<std::string> base = mpirun_base(2 * slots);
    argv.insert(argv.end(), base.begin(), base.end());
    for (const char* arg :
         {"--hostfile", hostfile.c_str(), "--mca", "plm_rsh_agent", BRAID_NETNS_AGENT, "--mca", "oob_tcp_if_include",
          kSubnet, "--mca", "btl_tcp_if_include", kSubnet}) {
      argv.emplace_back(arg);
    }
    env.emplace_back("BRAID_TIMEOUT=60");
    if (export_store) {
      env.insert(env.end(), {std::string("BRAID_JOB_TOKEN=") + kToken, "BRAID_MASTER_ADDR=" + TwoEmulatedHosts::address(0),
                             std::string("BRAID_MASTER_PORT=") + kPort});
    }
    for (const std::string& set : env) argv.insert(argv.end(), {"-x", set.substr(0, set.find('='))});
    argv.insert(argv.end(), program.begin(), program.end());
    // The test's own environment must not hand the ranks a store either.
    std::vector<std::string> unset = kOuterJob;
    if (!export_store) unset.insert(unset.end(), {"BRAID_JOB_TOKEN", "BRAID_MASTER_ADDR", "BRAID_MASTER_PORT"});
    return run(std::move(argv), std::move(env), limit_seconds, unset);
  }

  std::unique_ptr<TwoEmulatedHosts> hosts_;
  TempDir dir_;
};

void expect_every_rank_passed(const MpirunResult& result, const std::string& pass, int ranks) {
  EXPECT_EQ(result.process.exit_code, 0) << result.output();
  for (int rank = 0; rank < ranks; ++rank) {
    EXPECT_NE(result.output().find(pass + " rank " + std::to_string(rank)), std::string::npos)
        << "rank " << rank << ":\n" << result.output();
  }
}

TEST_F(MpirunAcrossHostsTest, CollectivesAcrossTwoHostsMatchTheReferenceExactly) {
  MpirunResult result = run_across(2, {test_program_path("braid-test-rank"), "collectives", "allreduce"});
  expect_every_rank_passed(result, "PASS collectives", 4);
}

TEST_F(MpirunAcrossHostsTest, BraidTrainAcrossTwoHostsEndsWithTheOneHostRunsParameters) {
  if (!std::filesystem::exists(tool_path("braid-train"))) GTEST_SKIP() << "built without LibTorch (BRAID_WITH_TORCH=OFF)";
  // One rank per host, as multinode_test: LibTorch's start-up is most of braid-train's time.
  std::vector<std::string> program{tool_path("braid-train")};
  program.insert(program.end(), kTwoHostTrainArgs.begin(), kTwoHostTrainArgs.end());
  MpirunResult across = run_across(1, program, {}, 120);
  ASSERT_EQ(across.process.exit_code, 0) << across.output();
  const std::string mpirun_crc = parameter_crc(across.output());
  ASSERT_FALSE(mpirun_crc.empty()) << across.output();

  // The computation it replaces: one braid-run of 2 ranks, rank r on "host" host<r>, so the
  // same algorithms run over TCP in the same order.
  LaunchResult reference = run_two_host_train_reference();
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  EXPECT_EQ(mpirun_crc, parameter_crc(reference.output)) << "mpirun:\n" << across.output() << "\nbraid-run:\n"
                                                         << reference.output;
}

TEST_F(MpirunAcrossHostsTest, ARankKilledMakesMpirunExitNonZeroAndTheSurvivorsNameIt) {
  // Rank 3 (host 1) dies at its 5th allreduce, by SIGKILL: no error of its own, no goodbye.
  MpirunResult result = run_across(2, {test_program_path("braid-test-rank"), "collectives", "allreduce"},
                                   {"BRAID_FAULT=rank=3,op=allreduce,nth=5,kind=kill"});
  const std::string out = result.output();
  EXPECT_NE(result.process.exit_code, 0) << out;
  EXPECT_NE(out.find("PeerLost"), std::string::npos) << "no survivor raised PeerLost:\n" << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(PeerLost \[rank [0-2], peer 3)"))) << "the lost rank is not named:\n" << out;
  EXPECT_EQ(out.find("PASS collectives"), std::string::npos) << out;
  EXPECT_FALSE(hosts_->has_processes(1)) << "ranks left in host 1 after mpirun exited";
}

TEST_F(MpirunAcrossHostsTest, FromMpiAcrossTwoHostsEqualsMpiAllreduceAndSplits) {
  // No store address, port or token exported: rank 0 picks its veth address and a token, and
  // broadcasts them over MPI.
  MpirunResult result = run_across(2, {test_program_path("braid-from-mpi-rank")}, {}, 60, /*export_store=*/false);
  expect_every_rank_passed(result, "PASS from_mpi", 4);
  // braid's hosts are Open MPI's nodes: shared memory inside each, TCP between.
  for (int rank = 0; rank < 4; ++rank) {
    const std::string topology = fmt::format("from_mpi rank {}: 2 hosts, local rank {} of 2", rank, rank % 2);
    EXPECT_NE(result.output().find(topology), std::string::npos) << topology << ":\n" << result.output();
  }
}

TEST(MpirunOneHostTest, FromMpiEqualsMpiAllreduceAndSplits) {
  std::vector<std::string> argv = mpirun_base(4);
  argv.push_back(test_program_path("braid-from-mpi-rank"));
  MpirunResult result = run(std::move(argv), {"BRAID_TIMEOUT=60"}, 60);
  expect_every_rank_passed(result, "PASS from_mpi", 4);
  EXPECT_NE(result.output().find("from_mpi rank 3: 1 hosts, local rank 3 of 4"), std::string::npos) << result.output();
}

TEST(MpirunOneHostTest, RankZeroFailingToStartTheStoreFailsEveryRankAtOnce) {
  std::vector<std::string> argv = mpirun_base(3);
  argv.insert(argv.end(), {"-x", "BRAID_MASTER_ADDR", test_program_path("braid-from-mpi-rank"), "store-failure"});
  // Within the 20 s limit, far below BRAID_TIMEOUT: nobody waits for a store that never comes.
  MpirunResult result = run(std::move(argv), {"BRAID_TIMEOUT=60", "BRAID_MASTER_ADDR=no-such-host.invalid"}, 20);
  expect_every_rank_passed(result, "PASS from_mpi", 3);
  EXPECT_NE(result.output().find("from_mpi rank 2: braid::InvalidArgument [rank 2, peer 0, op from_mpi]: rank 0 could "
                                 "not start the rendezvous store"),
            std::string::npos)
      << result.output();
}

}  // namespace
}  // namespace braid::testing
