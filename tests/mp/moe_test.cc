// Multi-process tests of MoE dispatch and combine (parallel/moe_dispatcher.h) through the
// scenarios of tests/mp/programs/moe_scenarios.cc: with EP = 1, 2 and 4 (and 3, odd) over
// shared memory and TCP, the combined output equals, bit for bit, what one process holding
// every expert computes for the same tokens (top-1, top-2, with and without drops, dropless,
// every token to one expert, idle experts, a rank without tokens, f32 and f64), for chunks
// 1, 2, 4 and the unpipelined primitives; the backward exchanges return what they should;
// the bytes of one layer's forward and backward equal braid-plan's MoE formulas within 1%.
// Bad layers and inputs are errors on every rank that name what is wrong, never a hang.
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class MoeTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(MoeTest, DispatchCombineEqualsTheSingleProcessReference) {
  expect_every_rank_passed(run_scenario(GetParam(), "moe"), "moe", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(EpSizes, MoeTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{2, "tcp"}, WorldGrid{4, "tcp"}),
                         grid_name);

struct ErrorCase {
  const char* what;
  int ranks;
  const char* kind;     // error_kind_name
  const char* message;  // a part of the message every rank prints
};

inline void PrintTo(const ErrorCase& c, std::ostream* out) { *out << c.what << " on " << c.ranks << " ranks"; }

class MoeErrorTest : public ::testing::TestWithParam<ErrorCase> {};

// Every rank gets the error (of the same kind, naming the same thing), then passes a barrier:
// nobody hung and the group is still in step.
TEST_P(MoeErrorTest, EveryRankNamesWhatIsWrong) {
  const ErrorCase& c = GetParam();
  LaunchResult r = run_scenario(WorldGrid{c.ranks, "auto"}, "moe-error", {c.what});
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_EQ(r.count("DONE moe-error"), c.ranks) << r.output;
  const auto lines = r.lines_with("MOE-ERROR rank");
  EXPECT_EQ(static_cast<int>(lines.size()), c.ranks) << r.output;
  for (const auto& line : lines) {
    EXPECT_NE(line.find(std::string(" ") + c.kind + ": "), std::string::npos) << line;
    EXPECT_NE(line.find(c.message), std::string::npos) << line;
  }
}

std::string error_name(const ::testing::TestParamInfo<ErrorCase>& info) {
  std::string name = info.param.what;
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name + "_" + std::to_string(info.param.ranks) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MoeErrorTest,
    ::testing::Values(
        ErrorCase{"experts", 2, "Mismatch", "ranks disagree on experts: rank 0 has 4, rank 1 has 6"},
        ErrorCase{"experts", 4, "Mismatch", "ranks disagree on experts: rank 0 has 8, rank 1 has 8, rank 2 has 8, rank 3 has 12"},
        ErrorCase{"hidden", 3, "Mismatch", "ranks disagree on hidden: rank 0 has 8, rank 1 has 8, rank 2 has 9"},
        ErrorCase{"indivisible", 2, "InvalidArgument", "experts (5) must be divisible by the EP group size (2)"},
        ErrorCase{"indivisible", 4, "InvalidArgument", "experts (9) must be divisible by the EP group size (4)"},
        ErrorCase{"capacity", 2, "InvalidArgument", "capacity factor must be > 0 and finite, got 0"},
        ErrorCase{"expert-id", 2, "InvalidArgument", "rank 1's gating output: token 3 choice 0 names expert 4, outside [0, 4)"},
        ErrorCase{"expert-id", 4, "InvalidArgument", "rank 3's gating output: token 3 choice 0 names expert 8, outside [0, 8)"},
        ErrorCase{"chunks", 3, "Mismatch", "ranks disagree on chunks: rank 0 has 2, rank 1 has 2, rank 2 has 3"}),
    error_name);

}  // namespace
}  // namespace braid::testing
