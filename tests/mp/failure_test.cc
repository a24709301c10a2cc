// Failure paths through real processes: a rank killed mid-transfer, a size mismatch, collective
// calls that disagree across ranks, a wrong job token. Each must end in a clear braid::Error
// (never a hang) and leave no shm behind.
#include <ostream>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

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

// Collective calls that disagree across 4 ranks, the last one odd (scenario
// `collective-mismatch KIND`, collective_mismatch_scenarios.cc), and the phrases every rank's
// Mismatch must contain: the ranks that receive from a disagreeing rank raise it from the
// envelope, the others from the abort the first of them sends to every rank (which quotes it).
struct MismatchCase {
  std::string kind;
  std::vector<std::string> phrases;
};

const MismatchCase kMismatchCases[] = {
    // Ring allgather: both edges of rank 3 (2 -> 3 and 3 -> 0) carry a disagreeing message.
    {"count", {"allgather #", "message size", "4000 bytes of f32", "4004 bytes of f32"}},
    {"dtype", {"element type", "bytes of f32", "bytes of i32"}},
    {"redop", {"the peer runs allreduce with ", ", this rank with ", "max", "sum"}},
    {"operation", {"different operations", "allreduce #", "allgather #"}},
    {"algorithm", {"the peer runs allreduce with algorithm #", "every rank must choose the same algorithm"}},
    // Only rank 3 sees a wrong envelope (root 0's data from rank 2 where it expects root 2's);
    // ranks 0-2 finish their broadcast correctly and learn of it at the barrier.
    {"root", {"the peer runs broadcast with root 0, this rank with root 2"}},
};

void PrintTo(const MismatchCase& c, std::ostream* os) { *os << c.kind; }

class CollectiveMismatchTest : public ::testing::TestWithParam<std::tuple<MismatchCase, std::string>> {};

TEST_P(CollectiveMismatchTest, RaisesMismatchOnEveryRankNeverHangsNorReturnsWrongData) {
  const auto& [mismatch, transport] = GetParam();
  LaunchOptions o;
  o.ranks = 4;
  o.program = test_program_path("braid-test-rank");
  o.args = {"collective-mismatch", mismatch.kind};
  // A hang would end in Timeout (an OTHER-ERROR line) after 20 s rather than at the launch limit.
  o.env = {{"BRAID_TRANSPORT", transport}, {"BRAID_TIMEOUT", "20"}};
  o.braid_run_flags = {"--grace", "20"};
  o.timeout_seconds = 60;
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_EQ(r.count("WRONG-DATA"), 0) << r.output;
  EXPECT_EQ(r.count("OTHER-ERROR"), 0) << r.output;
  // One line per rank; a rank still joining when the abort arrives reports it from main.cc
  // ("ERROR braid::Mismatch ..."), the others from the scenario ("MISMATCH rank r: ...").
  auto mismatches = r.lines_with("braid::Mismatch");
  EXPECT_EQ(mismatches.size(), 4u) << r.output;
  EXPECT_EQ(r.count("MISMATCH rank 3:"), 1) << "the odd rank is inside the call\n" << r.output;
  for (const auto& line : mismatches) {
    for (const auto& phrase : mismatch.phrases) {
      EXPECT_NE(line.find(phrase), std::string::npos) << phrase << "\n" << line;
    }
  }
  EXPECT_LT(r.seconds, 15.0) << "a mismatch must be raised at once, not at a timeout";
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

std::string mismatch_test_name(const ::testing::TestParamInfo<std::tuple<MismatchCase, std::string>>& param) {
  return std::get<0>(param.param).kind + "_" + std::get<1>(param.param);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CollectiveMismatchTest,
                         ::testing::Combine(::testing::ValuesIn(kMismatchCases), ::testing::Values("auto", "tcp")),
                         mismatch_test_name);

}  // namespace
}  // namespace braid::testing
