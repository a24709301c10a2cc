// Multi-process tests of the compressed allreduce (issue 4): the scenarios in
// programs/compressed_*.cc run by real ranks through braid-run.
#include <string>

#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class CompressedAllreduceTest : public ::testing::TestWithParam<WorldGrid> {};

// Every codec x counts 0, 1, n+1, 1000, 100003 (and a sum), bitwise equal to the simulated
// scheme, within the codec's bound of the exact allreduce, identical on every rank.
TEST_P(CompressedAllreduceTest, EveryCodecMatchesItsBoundAndEveryRankAgrees) {
  expect_every_rank_passed(run_scenario(GetParam(), "compressed"), "compressed", GetParam().ranks);
}

TEST_P(CompressedAllreduceTest, ErrorFeedbackLosesNothingAndSurvivesACheckpoint) {
  expect_every_rank_passed(run_scenario(GetParam(), "compressed-feedback"), "compressed-feedback", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CompressedAllreduceTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{5, "auto"}, WorldGrid{3, "tcp"},
                                           WorldGrid{4, "auto", 2}, WorldGrid{6, "auto", 3}),
                         grid_name);

// Over tcp with ring / pairwise algorithms the bytes the transports carried equal the
// reported wire bytes, and int8 / sign send at most 0.3x / 0.05x of the fp32 ring's bytes.
TEST(CompressedWireTest, ReportedBytesAreWhatTheTransportsCarried) {
  LaunchOptions options;
  options.ranks = 4;
  options.program = test_program_path("braid-test-rank");
  options.args = {"compressed"};
  options.env = {{"BRAID_TRANSPORT", "tcp"},         {"BRAID_TIMEOUT", "60"},
                 {"BRAID_ALGO_ALLGATHER", "ring"},    {"BRAID_ALGO_ALLREDUCE", "ring"},
                 {"BRAID_TEST_EXPECT_WIRE", "1"}};
  LaunchResult r = launch(options);
  expect_every_rank_passed(r, "compressed", 4);
  EXPECT_EQ(r.count("WIRE int8"), 4) << r.output;
}

TEST(CompressedConvergenceTest, EveryCodecTrainsLogisticRegressionNearTheUncompressedLoss) {
  LaunchResult r = run_scenario({4, "auto"}, "compressed-convergence");
  expect_every_rank_passed(r, "compressed-convergence", 4);
  EXPECT_EQ(r.count("LOSS "), 8) << r.output;
}

// Fault kinds (programs/compressed_fault_scenarios.cc) on 3 ranks of one host, and on 2 emulated
// hosts x 2 ranks, where fp16/int8 take the host-striped scheme: rank 1 and rank 0 then meet in
// a stripe, and errors must still name them by their ranks in the job.
class CompressedFaultTest : public ::testing::TestWithParam<WorldGrid> {
 protected:
  int ranks() const { return GetParam().ranks; }
  LaunchResult run_fault(const std::string& kind) const {
    LaunchOptions options;
    options.ranks = GetParam().ranks;
    options.program = test_program_path("braid-test-rank");
    options.args = {"compressed-fault", kind};
    options.env = {{"BRAID_TRANSPORT", "auto"}, {"BRAID_TIMEOUT", "60"},
                   {"BRAID_TEST_EMULATED_HOSTS", std::to_string(GetParam().emulated_hosts)}};
    options.braid_run_flags = {"--grace", "20"};
    return launch(options);
  }
};

TEST_P(CompressedFaultTest, FlippedByteUnderChecksumIsCorruptNamingTheSender) {
  LaunchResult r = run_fault("corrupt");
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  auto lines = r.lines_with("CORRUPT rank 0");
  ASSERT_EQ(lines.size(), 1u) << r.output;
  EXPECT_NE(lines[0].find("rank 1"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("compressed_allreduce(int8)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("CRC32C"), std::string::npos) << lines[0];
}

TEST_P(CompressedFaultTest, OutOfRangeIndexIsCorruptWithoutAChecksum) {
  LaunchResult r = run_fault("tampered-index");
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_GE(r.count("CORRUPT rank"), 1) << r.output;
  for (const auto& line : r.lines_with("CORRUPT rank")) EXPECT_NE(line.find("rank 1"), std::string::npos) << line;
}

TEST_P(CompressedFaultTest, DifferentCodecsOnDifferentRanksAreAMismatch) {
  LaunchResult r = run_fault("mismatch");
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_GE(r.count("MISMATCH rank"), 1) << r.output;
}

TEST_P(CompressedFaultTest, NonFiniteInputUnderRaiseIsRefusedOnEveryRankWhichThenCarryOn) {
  LaunchResult r = run_fault("nonfinite-raise");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("INVALID rank"), ranks()) << r.output;
  EXPECT_EQ(r.count("RECOVERED rank"), ranks()) << r.output;
  for (const auto& line : r.lines_with("INVALID rank")) EXPECT_NE(line.find("rank 1's input"), std::string::npos) << line;
}

TEST_P(CompressedFaultTest, NonFiniteInputUnderPropagateDecodesToNanInItsBlockOnly) {
  LaunchResult r = run_fault("nonfinite-propagate");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("NAN-BLOCK-OK rank"), ranks()) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Grids, CompressedFaultTest, ::testing::Values(WorldGrid{3, "auto"}, WorldGrid{4, "auto", 2}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
