// Failure paths of algorithms that synchronise through shared memory (allreduce one_shot and
// two_shot too) or through
// sub-communicators (allreduce shm_direct and hierarchical; broadcast, allgather, alltoall,
// alltoallv and reduce_scatter shm_direct): a rank killed or frozen in the middle of a run of calls ends every
// survivor's wait with a clear error naming it, a rank calling with a different count ends
// every rank's call with Mismatch, never a hang, and nothing is left in /dev/shm.
#include <algorithm>
#include <ostream>
#include <regex>

#include <gtest/gtest.h>

#include "launch.h"
#include "temp_dir.h"

namespace braid::testing {
namespace {

struct Case {
  std::string algorithm;
  int ranks;
  int emulated_hosts;  // 0: one host
  std::string op = "allreduce";
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.op << " " << c.algorithm << " with " << c.ranks << " ranks on " << std::max(1, c.emulated_hosts) << " host(s)";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.op + "_" + info.param.algorithm + "_" + std::to_string(info.param.ranks) + "ranks";
}

class SharedMemoryFailureTest : public ::testing::TestWithParam<Case> {
 protected:
  LaunchOptions options(const std::string& scenario, const std::string& timeout, const std::string& grace) {
    LaunchOptions o;
    o.ranks = GetParam().ranks;
    o.program = test_program_path("braid-test-rank");
    o.args = {scenario};
    o.env = {{"BRAID_TIMEOUT", timeout}, {"BRAID_TEST_ALGO", GetParam().algorithm}, {"BRAID_TEST_OP", GetParam().op}};
    if (GetParam().emulated_hosts > 0) o.env["BRAID_TEST_EMULATED_HOSTS"] = std::to_string(GetParam().emulated_hosts);
    // Survivors ignore SIGTERM and must finish on their own within the grace period.
    o.braid_run_flags = {"--grace", grace};
    o.timeout_seconds = 90;
    return o;
  }
  // Every survivor printed `tag` with a time below `limit` and the last rank's number.
  void expect_survivors_report(const LaunchResult& r, const std::string& tag, double limit) {
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_NE(r.exit_code, 0);
    auto reports = r.lines_with(tag + " rank");
    ASSERT_EQ(static_cast<int>(reports.size()), GetParam().ranks - 1) << r.output;
    const std::string last = std::to_string(GetParam().ranks - 1);
    std::regex timing(R"(after ([0-9.]+) s: )");
    for (const auto& line : reports) {
      std::smatch m;
      ASSERT_TRUE(std::regex_search(line, m, timing)) << line;
      EXPECT_LT(std::stod(m[1]), limit) << line;
    }
    EXPECT_FALSE(r.lines_with("peer " + last).empty()) << "the error names the lost rank:\n" << r.output;
    for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
  }
};

TEST_P(SharedMemoryFailureTest, KilledRankIsReportedAsPeerLostWithinFiveSeconds) {
  LaunchResult r = launch(options("shared-memory-victim", "60", "20"));
  // A survivor may be blocked on another survivor that already stopped; every one must still
  // learn of the loss (PeerLost from the victim, or the abort another survivor relays).
  EXPECT_EQ(r.count("WRONG-ERROR"), 0) << r.output;
  expect_survivors_report(r, "PEERLOST", 5.0);
}

// The survivors wait for each other's reports before they exit (BRAID_TEST_REPORT_DIR), so
// when braid-run stops the job every report is in: the grace period, which the frozen rank
// always sits out, can be short (it was 8 s, most of each case's time).
TEST_P(SharedMemoryFailureTest, FrozenRankIsReportedAsTimeout) {
  TempDir reports;
  LaunchOptions o = options("shared-memory-frozen", "2", "1");
  o.env["BRAID_TEST_REPORT_DIR"] = reports.path();
  LaunchResult r = launch(o);
  EXPECT_EQ(r.count("WRONG-ERROR"), 0) << r.output;
  expect_survivors_report(r, "TIMEOUT", 10.0);
}

TEST_P(SharedMemoryFailureTest, MismatchedCountIsReportedAsMismatchOnEveryRank) {
  // A hang would end in Timeout (a WRONG-ERROR line) after 20 s rather than at the launch limit.
  LaunchResult r = launch(options("shared-memory-mismatch", "20", "20"));
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.count("WRONG-ERROR"), 0) << r.output;
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_EQ(r.count("MISMATCH rank"), GetParam().ranks) << r.output;
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SharedMemoryFailureTest,
                         ::testing::Values(Case{"shm_direct", 2, 0}, Case{"shm_direct", 3, 0},
                                           Case{"one_shot", 2, 0}, Case{"two_shot", 3, 0},
                                           Case{"hierarchical", 4, 2}, Case{"shm_direct", 3, 0, "broadcast"},
                                           Case{"shm_direct", 3, 0, "allgather"}, Case{"shm_direct", 3, 0, "alltoall"},
                                           Case{"shm_direct", 3, 0, "reduce_scatter"},
                                           Case{"shm_direct", 3, 0, "alltoallv"}),
                         case_name);

}  // namespace
}  // namespace braid::testing
