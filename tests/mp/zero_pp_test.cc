// Multi-process tests of ZeRO++'s quantised collectives (programs/zeropp_scenarios.cc) on 1..4
// ranks over shared memory and TCP: qwZ's int8 allgather (identical bytes on every rank, the
// int8 bound, exact zeros, the predicted wire bytes, non-finite weights refused on every rank)
// and GradSync's qgZ reduce-scatter (bit for bit the rank-order reference, wire bytes, padding).
#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

class ZeroPlusPlusTest : public ::testing::TestWithParam<WorldGrid> {};

TEST_P(ZeroPlusPlusTest, QuantizedAllgatherAndReduceScatterAgreeWithTheirReferences) {
  expect_every_rank_passed(run_scenario(GetParam(), "zero_pp", {GetParam().transport}), "zero_pp", GetParam().ranks);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ZeroPlusPlusTest,
                         ::testing::Values(WorldGrid{1, "auto"}, WorldGrid{2, "auto"}, WorldGrid{3, "auto"},
                                           WorldGrid{4, "auto"}, WorldGrid{2, "tcp"}, WorldGrid{3, "tcp"}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
