// The process mesh over braid-run's processes (the `mesh` scenario of braid-test-rank): every
// group's communicator holds the ranks the arithmetic says, for 8 ranks as dp=2 x pp=2 x tp=2
// and 4 ranks in several shapes, over shared memory and TCP; a layout that does not fit the
// world is refused on every rank with the layout in the message, without a hang; a TP group
// across (emulated) hosts is refused unless allowed, and then warned about once. Emulated
// hosts interleave: rank r is on host r % hosts.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "world_grid.h"

namespace braid::testing {
namespace {

struct MeshCase {
  WorldGrid grid;
  std::vector<std::string> args;  // LAYOUT [options]
};

void PrintTo(const MeshCase& c, std::ostream* out) {
  PrintTo(c.grid, out);
  for (const auto& a : c.args) *out << " " << a;
}

class ProcessMeshTest : public ::testing::TestWithParam<MeshCase> {};

TEST_P(ProcessMeshTest, EveryGroupHoldsTheArithmeticsRanks) {
  const MeshCase& c = GetParam();
  expect_every_rank_passed(run_scenario(c.grid, "mesh", c.args), "mesh", c.grid.ranks);
}

MeshCase mesh_case(int ranks, const char* transport, int hosts, std::vector<std::string> args) {
  MeshCase c;
  c.grid.ranks = ranks;
  c.grid.transport = transport;
  c.grid.emulated_hosts = hosts;
  c.args = std::move(args);
  return c;
}

// "auto_8ranks_dp2_pp2_tp2": the grid point and the layout's sizes.
std::string mesh_case_name(const ::testing::TestParamInfo<MeshCase>& param) {
  std::string name = grid_name({param.param.grid, param.index});
  name.append("_");
  for (char ch : param.param.args.front()) {
    if (ch == ',') name.push_back('_');
    else if (ch != '=') name.push_back(ch);
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Layouts, ProcessMeshTest,
                         ::testing::Values(mesh_case(8, "auto", 1, {"dp=2,pp=2,tp=2", "group=dp+tp"}),
                                           mesh_case(4, "auto", 1, {"dp=2,pp=1,tp=2"}),
                                           // The MoE mesh (base/moe_mesh_layout.h): data-parallel is edp x ep.
                                           mesh_case(8, "auto", 1, {"edp=2,ep=2,pp=2,tp=1"}),
                                           mesh_case(4, "auto", 1, {"dp=1,pp=1,tp=4"}),
                                           mesh_case(4, "auto", 1, {"dp=4"}),
                                           mesh_case(4, "tcp", 1, {"dp=1,pp=2,tp=2", "group=dp+pp"}),
                                           // tp outermost: TP groups {0, 2} and {1, 3}, each on one host.
                                           mesh_case(4, "auto", 2, {"tp=2,dp=2"})),
                         mesh_case_name);

// Every rank reports the error itself (none is left waiting in a split) and the job fails.
void expect_refused_on_every_rank(const LaunchResult& r, int ranks, const std::string& message) {
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("PASS mesh"), 0) << r.output;
  EXPECT_EQ(r.count(message), ranks) << r.output;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string where = "braid::InvalidArgument [rank " + std::to_string(rank) + ", op process_mesh]";
    EXPECT_EQ(r.count(where), 1) << where << "\n" << r.output;
  }
}

TEST(ProcessMeshRefusalTest, LayoutOfSixRanksOnEightFailsOnEveryRank) {
  const LaunchResult r = run_scenario({8, "auto"}, "mesh", {"dp=3,pp=1,tp=2"});
  expect_refused_on_every_rank(r, 8, "layout dp=3 x pp=1 x tp=2 has 6 ranks but the world has 8");
}

TEST(ProcessMeshRefusalTest, AxisOfSizeZeroFailsOnEveryRank) {
  const LaunchResult r = run_scenario({4, "auto"}, "mesh", {"dp=0,tp=4"});
  expect_refused_on_every_rank(r, 4, "layout dp=0 x tp=4: axis dp has size 0");
}

TEST(ProcessMeshRefusalTest, TpGroupAcrossHostsIsRefusedOnEveryRank) {
  const LaunchResult r = run_scenario({4, "auto", 2}, "mesh", {"dp=2,tp=2"});
  expect_refused_on_every_rank(r, 4, "layout dp=2 x tp=2 puts TP group 0 (ranks 0, 1) on hosts 0, 1");
}

TEST(ProcessMeshRefusalTest, TpGroupAcrossHostsWhenAllowedWarnsOnce) {
  const LaunchResult r = run_scenario({4, "auto", 2}, "mesh", {"dp=2,tp=2", "allow-tp-across-hosts"});
  expect_every_rank_passed(r, "mesh", 4);
  EXPECT_EQ(r.count("accepted (MeshOptions::allow_tp_across_hosts)"), 1) << r.output;
}

}  // namespace
}  // namespace braid::testing
