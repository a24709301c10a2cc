// Multi-process tests of allgather, reduce_scatter and broadcast: every registered algorithm
// (those that accept the world size) over dtypes x ops x counts x in-place x roots, checked
// bit for bit on every rank by the `collectives` scenario of braid-test-rank, for world sizes
// 1..5 over shared memory and TCP, and a mixed shm/TCP job on two emulated hosts.
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

struct Grid {
  int ranks;
  std::string transport;   // "auto" (shm on one host) or "tcp"
  int emulated_hosts = 1;  // > 1: ranks claim different host ids, so shm and tcp mix
};

void PrintTo(const Grid& grid, std::ostream* out) {
  *out << grid.ranks << " ranks over " << grid.transport << " on " << grid.emulated_hosts << " host(s)";
}

std::string grid_name(const ::testing::TestParamInfo<Grid>& info) {
  // Built by appending: GCC 12 warns (-Wrestrict, a false positive) on "_" + std::to_string().
  std::string name = info.param.transport;
  name.append("_").append(std::to_string(info.param.ranks)).append("ranks");
  if (info.param.emulated_hosts > 1) name.append("_").append(std::to_string(info.param.emulated_hosts)).append("hosts");
  return name;
}

class CollectivesTest : public ::testing::TestWithParam<Grid> {};

TEST_P(CollectivesTest, EveryAlgorithmMatchesTheReferenceExactly) {
  LaunchOptions options;
  options.ranks = GetParam().ranks;
  options.program = test_program_path("braid-test-rank");
  options.args = {"collectives"};
  options.env = {{"BRAID_TRANSPORT", GetParam().transport}, {"BRAID_TIMEOUT", "60"},
                 {"BRAID_TEST_EMULATED_HOSTS", std::to_string(GetParam().emulated_hosts)}};
  LaunchResult r = launch(options);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("PASS collectives"), GetParam().ranks) << r.output;
  EXPECT_EQ(r.count("FAIL"), 0) << r.output;
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectivesTest,
                         ::testing::Values(Grid{1, "auto"}, Grid{2, "auto"}, Grid{3, "auto"}, Grid{4, "auto"},
                                           Grid{5, "auto"}, Grid{1, "tcp"}, Grid{2, "tcp"}, Grid{3, "tcp"},
                                           Grid{4, "tcp"}, Grid{5, "tcp"}, Grid{4, "auto", 2}),
                         grid_name);

}  // namespace
}  // namespace braid::testing
