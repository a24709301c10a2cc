// Shared-memory set-up when braid-run is not the launcher (torchrun, mpirun, srun, by hand):
// the test starts every rank process itself with torchrun's variables, so nothing cleans
// /dev/shm after the ranks. A healthy job must hold no /dev/shm name once set up, and a rank
// failing during set-up (ranks disagreeing on a geometry, a setting one rank refuses, a peer
// that never arrives) must leave no /dev/shm/braid-<job id>-* behind (issue 16, item 5).
// Also: a shared-memory size no machine can give is refused at once, before any memory is
// touched (item 6).
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/tools/braid_run/free_port.h"
#include "braid/transport/shm/shm_budget.h"
#include "braid/transport/shm/shm_layout.h"
#include "launch.h"
#include "process_runner.h"

namespace braid::testing {
namespace {

using launcher_testing::ProcessResult;
using launcher_testing::RunningProcess;
using ::testing::HasSubstr;

// What the job's ranks printed and how they ended.
struct JobResult {
  std::string job_id;
  std::vector<ProcessResult> ranks;
  std::string output() const {
    std::string all;
    for (std::size_t r = 0; r < ranks.size(); ++r) all += fmt::format("--- rank {}:\n{}{}", r, ranks[r].out, ranks[r].err);
    return all;
  }
};

struct Job {
  int world_size = 2;
  int started = -1;  // ranks actually started (-1: all)
  std::vector<std::string> args{"barrier"};
  std::vector<std::string> env;                   // every rank
  std::map<int, std::vector<std::string>> env_of;  // per rank
};

// A job id of this test process alone, so other runs' segments are never looked at.
std::string fresh_job_id() {
  static int jobs = 0;
  return fmt::format("shmsetup{}_{}", ::getpid(), ++jobs);
}

// Starts the ranks as torchrun would (RANK, WORLD_SIZE, ..., MASTER_PORT; no BRAID_RANK and
// no braid-run) and waits for every one.
JobResult run_job(const Job& job) {
  JobResult result{.job_id = fresh_job_id()};
  const int port = launcher::pick_free_port("127.0.0.1");
  const std::vector<std::string> unset{"BRAID_RANK", "BRAID_WORLD_SIZE", "BRAID_LOCAL_RANK", "BRAID_LOCAL_WORLD_SIZE",
                                       "BRAID_MASTER_ADDR", "BRAID_MASTER_PORT", "BRAID_JOB_TOKEN", "BRAID_HOST_ID",
                                       "BRAID_TRANSPORT", "BRAID_SHM_RING_BYTES", "BRAID_SHM_SLICE_BYTES"};
  std::vector<std::unique_ptr<RunningProcess>> ranks;
  const int started = job.started < 0 ? job.world_size : job.started;
  for (int r = 0; r < started; ++r) {
    std::vector<std::string> env{fmt::format("RANK={}", r), fmt::format("WORLD_SIZE={}", job.world_size),
                                 fmt::format("LOCAL_RANK={}", r), fmt::format("LOCAL_WORLD_SIZE={}", job.world_size),
                                 "MASTER_ADDR=127.0.0.1", fmt::format("MASTER_PORT={}", port),
                                 "BRAID_JOB_ID=" + result.job_id};
    env.insert(env.end(), job.env.begin(), job.env.end());
    if (auto own = job.env_of.find(r); own != job.env_of.end()) env.insert(env.end(), own->second.begin(), own->second.end());
    std::vector<std::string> argv{test_program_path("braid-test-rank")};
    argv.insert(argv.end(), job.args.begin(), job.args.end());
    ranks.push_back(std::make_unique<RunningProcess>(argv, env, unset));
  }
  for (auto& rank : ranks) result.ranks.push_back(rank->wait(std::chrono::seconds(60)));
  return result;
}

void expect_every_rank_failed(const JobResult& job) {
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    EXPECT_FALSE(job.ranks[r].timed_out) << "rank " << r << "\n" << job.output();
    EXPECT_NE(job.ranks[r].exit_code, 0) << "rank " << r << "\n" << job.output();
  }
}

// Removes what it finds, so that a failing run leaves /dev/shm as it found it.
void expect_no_leftovers(const JobResult& job) {
  std::vector<std::string> left = shm_leftovers(job.job_id);
  EXPECT_THAT(left, ::testing::IsEmpty()) << job.output();
  for (const std::string& name : left) std::filesystem::remove(std::filesystem::path("/dev/shm") / name);
}

class ShmSetupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/dev/shm", W_OK) != 0) GTEST_SKIP() << "no writable /dev/shm";
  }
};

TEST_F(ShmSetupTest, HealthyJobHoldsNoNamesOnceSetUp) {
  JobResult job = run_job({.world_size = 3, .args = {"shm-names-after-setup"}});
  for (std::size_t r = 0; r < job.ranks.size(); ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << job.output();
  for (const ProcessResult& rank : job.ranks) EXPECT_THAT(rank.out, HasSubstr("SHM-NAMES-LEFT 0")) << job.output();
  expect_no_leftovers(job);
}

TEST_F(ShmSetupTest, RingGeometryMismatchLeavesNothing) {
  JobResult job = run_job({.world_size = 2, .env = {"BRAID_TIMEOUT=10"},
                           .env_of = {{1, {"BRAID_SHM_RING_BYTES=1048576"}}}});
  expect_every_rank_failed(job);
  // Each rank detects it, unless the other's exit (rank 0 holds the store) reaches it first.
  EXPECT_THAT(job.output(), HasSubstr("Mismatch")) << job.output();
  expect_no_leftovers(job);
}

TEST_F(ShmSetupTest, SettingRefusedByOneRankLeavesNothing) {
  JobResult job = run_job({.world_size = 3, .env = {"BRAID_TIMEOUT=30"},
                           .env_of = {{2, {"BRAID_SHM_RING_BYTES=3000"}}}});
  expect_every_rank_failed(job);
  EXPECT_THAT(job.ranks[2].out, HasSubstr("BRAID_SHM_RING_BYTES='3000' is not a power of two")) << job.output();
  // Rank 2 tells the others why before it leaves (rank 0 holds the store, so it always reads
  // it), and nobody waits for it until BRAID_TIMEOUT.
  EXPECT_THAT(job.ranks[0].out, HasSubstr("rank 2 refused its settings")) << job.output();
  for (const ProcessResult& rank : job.ranks) EXPECT_LT(rank.seconds, 10.0) << job.output();
  expect_no_leftovers(job);
}

TEST_F(ShmSetupTest, PeerThatNeverArrivesLeavesNothing) {
  JobResult job = run_job({.world_size = 3, .started = 2, .env = {"BRAID_TIMEOUT=2"}});
  expect_every_rank_failed(job);
  EXPECT_THAT(job.output(), HasSubstr("Timeout")) << job.output();
  expect_no_leftovers(job);
}

TEST_F(ShmSetupTest, WorkspacePeerThatNeverArrivesLeavesNothing) {
  JobResult job = run_job({.world_size = 3, .args = {"shm-absent-peer", "5"}, .env = {"BRAID_TIMEOUT=2"}});
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(job.ranks[r].exit_code, 0) << job.output();
    EXPECT_THAT(job.ranks[r].out, HasSubstr("ERROR")) << job.output();
  }
  expect_no_leftovers(job);
}

TEST_F(ShmSetupTest, WorkspaceGeometryMismatchLeavesNothing) {
  JobResult job = run_job({.world_size = 3, .args = {"shm-names-after-setup"}, .env = {"BRAID_TIMEOUT=10"},
                           .env_of = {{2, {"BRAID_SHM_SLICE_BYTES=65536"}}}});
  expect_every_rank_failed(job);
  expect_no_leftovers(job);
}

// 1 TiB rings would take 2 TiB per rank here; refused by the declared range, before any
// segment exists, on every rank, within seconds (a rank other than 0 first tries for up to
// 2 s to tell rank 0, which has refused too and left).
TEST_F(ShmSetupTest, OneTebibyteRingsAreRefusedAtOnce) {
  JobResult job = run_job({.world_size = 2, .env = {"BRAID_SHM_RING_BYTES=1099511627776", "BRAID_TIMEOUT=20"}});
  expect_every_rank_failed(job);
  for (const ProcessResult& rank : job.ranks) {
    EXPECT_THAT(rank.out, HasSubstr("InvalidArgument")) << job.output();
    EXPECT_THAT(rank.out, HasSubstr("BRAID_SHM_RING_BYTES='1099511627776' is not a power of two in [4096, 1073741824]"))
        << job.output();
    EXPECT_LT(rank.seconds, 10.0) << job.output();
  }
  expect_no_leftovers(job);
}

// Rings within their range whose total this machine cannot give: refused by every rank with the
// arithmetic, before any segment exists. Skipped where the machine could give even twice the
// total, since the ranks would then create (and pre-fault) it.
TEST_F(ShmSetupTest, RingsBeyondWhatTheMachineCanGiveAreRefusedWithTheArithmetic) {
  constexpr int kRanks = 8;
  const shm::SegmentLayout layout{.slots = kRanks, .ring_bytes = std::size_t{1} << 30};
  const std::uint64_t total = shm::saturating_product(kRanks, layout.total_bytes());
  if (total <= 2 * shm::shm_budget(shm::probe_machine_memory())) GTEST_SKIP() << "this machine could give " << total;
  JobResult job = run_job({.world_size = kRanks, .env = {"BRAID_SHM_RING_BYTES=1073741824", "BRAID_TIMEOUT=20"}});
  expect_every_rank_failed(job);
  // Rank 0 always gets that far; a rank still joining when it exits reports the lost store.
  const std::string& first = job.ranks[0].out;
  EXPECT_THAT(first, HasSubstr(fmt::format("BRAID_SHM_RING_BYTES=1073741824 needs {} bytes", total))) << job.output();
  EXPECT_THAT(first, HasSubstr("8 ranks x 8 rings of 1073741824 bytes")) << job.output();
  EXPECT_THAT(first, HasSubstr("more than the limit of")) << job.output();
  for (const ProcessResult& rank : job.ranks) EXPECT_LT(rank.seconds, 10.0) << job.output();
  expect_no_leftovers(job);
}

}  // namespace
}  // namespace braid::testing
