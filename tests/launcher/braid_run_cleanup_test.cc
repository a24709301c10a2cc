// End to end: braid-run leaves nothing behind, neither processes (ranks, their children)
// nor the job's shared-memory segments, however the job ends.
#include <signal.h>

#include <filesystem>
#include <regex>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process_runner.h"

namespace braid::launcher_testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Rank script part: create a segment the way transport/shm names them, and print the job id.
constexpr const char* kCreateSegment =
    "touch /dev/shm/braid-$BRAID_JOB_ID-test-$BRAID_RANK && echo job=$BRAID_JOB_ID; ";

std::string job_id_from(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("job=([0-9a-f]+)"))) return "";
  return m[1];
}

// Files of this job still in /dev/shm.
int segments_left(const std::string& job_id) {
  int left = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
    left += it->path().filename().string().starts_with("braid-" + job_id + "-");
  }
  return left;
}

class BraidRunCleanup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm on this machine";
  }
};

TEST_F(BraidRunCleanup, SegmentsAreRemovedAfterSuccess) {
  ProcessResult r = run_braid({"-n", "2", "sh", "-c", std::string(kCreateSegment) + "test -e /dev/shm/braid-$BRAID_JOB_ID-test-$BRAID_RANK"});
  ASSERT_EQ(r.exit_code, 0) << r.err;  // the segments did exist while the ranks ran
  std::string job_id = job_id_from(r.out);
  ASSERT_FALSE(job_id.empty()) << r.out;
  EXPECT_EQ(segments_left(job_id), 0);
}

TEST_F(BraidRunCleanup, SegmentsAreRemovedWhenARankIsKilled) {
  ProcessResult r = run_braid({"-n", "2", "sh", "-c", std::string(kCreateSegment) + "kill -9 $$"});
  EXPECT_EQ(r.exit_code, 137) << r.err;
  std::string job_id = job_id_from(r.out);
  ASSERT_FALSE(job_id.empty()) << r.out;
  EXPECT_EQ(segments_left(job_id), 0);
}

TEST_F(BraidRunCleanup, SigintLeavesNoOrphansAndNoSegments) {
  TempDir dir;
  // Each rank starts a child of its own (a grandchild of braid-run), as a data loader would.
  const std::string script = std::string(kCreateSegment) +
                             "sleep 60 & echo $! > $D/$BRAID_RANK.c && mv $D/$BRAID_RANK.c $D/$BRAID_RANK.child.pid; "
                             "echo $$ > $D/$BRAID_RANK.r && mv $D/$BRAID_RANK.r $D/$BRAID_RANK.rank.pid; wait";
  RunningProcess braid({braid_run_path(), "--env", "D=" + dir.path(), "-n", "3", "sh", "-c", script});
  ASSERT_TRUE(wait_for_files(dir.path(), ".pid", 6));
  ::kill(braid.pid(), SIGINT);
  ProcessResult r = braid.wait();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  std::vector<pid_t> pids = read_pids(dir.path(), ".pid");
  EXPECT_EQ(pids.size(), 6u);
  for (pid_t pid : pids) EXPECT_TRUE(wait_until_gone(pid)) << "pid " << pid << " outlived braid-run";
  std::string job_id = job_id_from(r.out);
  ASSERT_FALSE(job_id.empty()) << r.out;
  EXPECT_EQ(segments_left(job_id), 0);
}

TEST_F(BraidRunCleanup, ChildrenOfAFailedRanksPeersAreStopped) {
  TempDir dir;
  // Rank 1 fails once rank 0's background child is running; that child must not survive.
  const std::string script =
      "if [ $BRAID_RANK = 0 ]; then sleep 60 & echo $! > $D/c && mv $D/c $D/child.pid; wait; fi; "
      "while [ ! -e $D/child.pid ]; do sleep 0.05; done; exit 7";
  ProcessResult r = run_braid({"--env", "D=" + dir.path(), "-n", "2", "sh", "-c", script});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  std::vector<pid_t> pids = read_pids(dir.path(), ".pid");
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(wait_until_gone(pids[0]));
}

TEST_F(BraidRunCleanup, BackgroundChildOfASuccessfulRankIsStopped) {
  TempDir dir;
  ProcessResult r = run_braid({"--env", "D=" + dir.path(), "-n", "1", "sh", "-c",
                               "sleep 60 > /dev/null 2>&1 & echo $! > $D/c && mv $D/c $D/child.pid; exit 0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<pid_t> pids = read_pids(dir.path(), ".pid");
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(wait_until_gone(pids[0]));
  EXPECT_LT(r.seconds, 10);
}

TEST_F(BraidRunCleanup, RanksDieWhenBraidRunIsKilled) {
  TempDir dir;
  // exec: the rank process itself sleeps, carrying the parent-death signal braid-run set.
  RunningProcess braid({braid_run_path(), "--env", "D=" + dir.path(), "-n", "2", "sh", "-c",
                        "echo $$ > $D/$BRAID_RANK.r && mv $D/$BRAID_RANK.r $D/$BRAID_RANK.pid; exec sleep 60"});
  ASSERT_TRUE(wait_for_files(dir.path(), ".pid", 2));
  ::kill(braid.pid(), SIGKILL);
  ProcessResult r = braid.wait();
  EXPECT_EQ(r.exit_code, 137);
  std::vector<pid_t> pids = read_pids(dir.path(), ".pid");
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) EXPECT_TRUE(wait_until_gone(pid)) << "rank pid " << pid << " outlived braid-run";
}

}  // namespace
}  // namespace braid::launcher_testing
