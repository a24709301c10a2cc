// Failure paths through real processes: a rank killed mid-transfer, a size mismatch, a wrong
// job token. Each must end in a clear braid::Error (never a hang) and leave no shm behind.
#include <regex>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

class FailureTest : public ::testing::TestWithParam<std::string> {
 protected:
  LaunchOptions options(int ranks, const std::string& scenario) {
    LaunchOptions o;
    o.ranks = ranks;
    o.program = test_program_path("braid-test-rank");
    o.args = {scenario};
    o.env = {{"BRAID_TRANSPORT", GetParam()}, {"BRAID_TIMEOUT", "60"}};
    return o;
  }
  void expect_no_leftovers(const LaunchResult& r) {
    for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
  }
};

TEST_P(FailureTest, KilledRankIsReportedAsPeerLostWithinFiveSeconds) {
  LaunchOptions o = options(3, "victim");
  o.braid_run_flags = {"--grace", "20"};  // survivors ignore SIGTERM; they must finish on their own
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.lines_with("rank 2").empty()) << r.output;
  EXPECT_FALSE(r.lines_with("signal 9").empty()) << "braid-run names the signal:\n" << r.output;
  auto lost = r.lines_with("PEERLOST");
  ASSERT_EQ(lost.size(), 2u) << r.output;
  std::regex timing(R"(after ([0-9.]+) s: .*peer 2)");
  for (const auto& line : lost) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, timing)) << line;
    EXPECT_LT(std::stod(m[1]), 5.0) << line;
  }
  expect_no_leftovers(r);
}

TEST_P(FailureTest, SizeMismatchRaisesMismatchOnBothSides) {
  LaunchOptions o = options(2, "mismatch");
  o.braid_run_flags = {"--grace", "20"};
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  auto mismatches = r.lines_with("MISMATCH");
  ASSERT_EQ(mismatches.size(), 2u) << r.output;
  EXPECT_EQ(r.lines_with("expected send/recv, 200 bytes of u8, received send/recv #0, 100 bytes of u8").size(), 2u)
      << r.output;
  expect_no_leftovers(r);
}

TEST_P(FailureTest, CollectiveCountMismatchRaisesMismatchNotAHang) {
  // 4 ranks of a ring allgather; rank 3 passes one element more, so both of its edges
  // (2 -> 3 and 3 -> 0) carry a disagreeing message. The receiver on the edge checked first
  // raises Mismatch and reports it to every rank, so all four end with braid::Mismatch.
  LaunchOptions o = options(4, "collective-mismatch");
  o.braid_run_flags = {"--grace", "20"};
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  // Every rank raises Mismatch: the two next to the odd rank from the envelopes, the others
  // from the abort the first of them sends to every rank.
  EXPECT_EQ(r.count("braid::Mismatch"), 4) << r.output;
  auto mismatches = r.lines_with("MISMATCH rank");
  ASSERT_FALSE(mismatches.empty()) << r.output;
  for (const auto& line : mismatches) {
    EXPECT_NE(line.find("allgather #"), std::string::npos) << line;
    EXPECT_NE(line.find("4000 bytes of f32"), std::string::npos) << line;
    EXPECT_NE(line.find("4004 bytes of f32"), std::string::npos) << line;
  }
  expect_no_leftovers(r);
}

TEST_P(FailureTest, WrongJobTokenIsRefusedAndLogged) {
  LaunchOptions o = options(2, "barrier");
  o.env["BRAID_TEST_WRONG_TOKEN_RANK"] = "1";
  o.env["BRAID_TIMEOUT"] = "20";
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.lines_with("job token").empty()) << r.output;      // rank 1's error says why
  EXPECT_FALSE(r.lines_with("wrong job token").empty()) << r.output;  // rank 0's store logged it
  EXPECT_LT(r.seconds, 15.0) << "the refused rank must fail fast, not at the timeout";
  expect_no_leftovers(r);
}

TEST_P(FailureTest, SilentPeerRaisesTimeoutNamingIt) {
  LaunchOptions o = options(2, "timeout");
  o.env["BRAID_TIMEOUT"] = "2";
  o.braid_run_flags = {"--grace", "20"};
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  auto timeouts = r.lines_with("TIMEOUT");
  ASSERT_EQ(timeouts.size(), 2u) << r.output;
  for (const auto& line : timeouts) {
    EXPECT_NE(line.find("timed out after"), std::string::npos) << line;
    EXPECT_NE(line.find("from rank"), std::string::npos) << line;
  }
  EXPECT_LT(r.seconds, 15.0);
  expect_no_leftovers(r);
}

INSTANTIATE_TEST_SUITE_P(Transports, FailureTest, ::testing::Values("auto", "tcp"));

}  // namespace
}  // namespace braid::testing
