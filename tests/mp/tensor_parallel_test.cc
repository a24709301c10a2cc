// Multi-process tests of the tensor-parallel primitives (parallel/tensor_parallel.h) and of
// AxisTraffic (parallel/axis_traffic.h), through the scenarios of
// tests/mp/programs/tensor_parallel_scenarios.cc: gather_along, reduce_scatter_along,
// split_along and tp_allreduce against locally computed results for f32, f64 and i32 over
// shapes with outer/inner 1 and > 1 and empty ones, blocking and non-blocking, bitwise equal on
// every rank; bad arguments refused at the call; a rank passing another `local` reported as an
// error on every rank, never a hang; AxisTraffic's counts against the documented formulas,
// beside the collective tracer (world sizes 1..4 over shared memory and TCP).
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class TensorParallelTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(TensorParallelTest, PrimitivesMatchTheExpectedArrangementOnEveryRank) {
  expect_every_rank_passed(run_scenario(GetParam(), "tensor-parallel"), "tensor-parallel", GetParam().ranks);
}

TEST_P(TensorParallelTest, DroppedHandlesStillCompleteTheRearrangedCollectives) {
  expect_every_rank_passed(run_scenario(GetParam(), "tensor-parallel-dropped"), "tensor-parallel-dropped",
                           GetParam().ranks);
}

TEST_P(TensorParallelTest, AxisTrafficCountsTheDocumentedBytes) {
  expect_every_rank_passed(run_scenario(GetParam(), "axis-traffic"), "axis-traffic", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TensorParallelTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{2, "tcp"}, WorldGrid{3, "tcp"},
                                           WorldGrid{4, "tcp"}),
                         grid_name);

// The last rank passes local + 1, or 0 (its call moves nothing; the collective after it finds
// the ranks out of step): every rank reports an error (Mismatch on the ranks involved), none
// hangs until BRAID_TIMEOUT and none succeeds.
// Plain pointers: GCC 12 warns (a false positive, -Wmaybe-uninitialized) on strings nested in
// the parameter values.
struct MismatchCase {
  int ranks;
  const char* transport;
  const char* op;
};

inline void PrintTo(const MismatchCase& c, std::ostream* out) {
  *out << c.op << " on " << c.ranks << " ranks over " << c.transport;
}

class TensorParallelMismatchTest : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(TensorParallelMismatchTest, OtherLocalIsAnErrorOnEveryRankNotAHang) {
  const MismatchCase& c = GetParam();
  LaunchResult r = run_scenario(WorldGrid{c.ranks, c.transport}, "tensor-parallel-mismatch", {c.op});
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.count("DONE tensor-parallel-mismatch"), c.ranks) << r.output;
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  EXPECT_GE(r.count("MISMATCH rank"), 1) << r.output;
  EXPECT_EQ(r.count("MISMATCH rank") + r.count("ERROR-NOT-MISMATCH"), c.ranks) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "a mismatch must be reported at once, not at BRAID_TIMEOUT (60 s)";
}

std::string mismatch_name(const ::testing::TestParamInfo<MismatchCase>& info) {
  std::string name = info.param.op;
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  name.append("_").append(info.param.transport).append("_");
  name.append(std::to_string(info.param.ranks)).append("ranks");
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Ops, TensorParallelMismatchTest,
    ::testing::Values(MismatchCase{2, "auto", "gather"}, MismatchCase{3, "auto", "gather-outer"},
                      MismatchCase{4, "auto", "igather"}, MismatchCase{2, "auto", "reduce-scatter"},
                      MismatchCase{4, "auto", "reduce-scatter-outer"}, MismatchCase{3, "tcp", "gather"},
                      MismatchCase{4, "tcp", "reduce-scatter-outer"}, MismatchCase{3, "auto", "gather-zero"},
                      MismatchCase{4, "tcp", "gather-zero"}),
    mismatch_name);

}  // namespace
}  // namespace braid::testing
