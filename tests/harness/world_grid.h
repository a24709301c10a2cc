// The grid the multi-process tests run over: world size x transport x emulated hosts, and the
// one way every grid test launches a scenario of braid-test-rank and checks that each rank
// passed it (and that nothing was left in /dev/shm).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {

struct WorldGrid {
  int ranks;
  std::string transport;   // "auto" (shm on one host) or "tcp"
  int emulated_hosts = 1;  // > 1: ranks claim different host ids, so shm and tcp mix
};

inline void PrintTo(const WorldGrid& grid, std::ostream* out) {
  *out << grid.ranks << " ranks over " << grid.transport << " on " << grid.emulated_hosts << " host(s)";
}

// "tcp_4ranks", "auto_4ranks_2hosts" (built by appending: GCC 12 warns, a false positive,
// on "_" + std::to_string()).
inline std::string grid_name(const ::testing::TestParamInfo<WorldGrid>& info) {
  std::string name = info.param.transport;
  name.append("_").append(std::to_string(info.param.ranks)).append("ranks");
  if (info.param.emulated_hosts > 1) name.append("_").append(std::to_string(info.param.emulated_hosts)).append("hosts");
  return name;
}

// Runs `braid-test-rank SCENARIO ARGS...` on the grid point, with a 60 s BRAID_TIMEOUT.
inline LaunchResult run_scenario(const WorldGrid& grid, const std::string& scenario,
                                 const std::vector<std::string>& args = {}) {
  LaunchOptions options;
  options.ranks = grid.ranks;
  options.program = test_program_path("braid-test-rank");
  options.args = {scenario};
  options.args.insert(options.args.end(), args.begin(), args.end());
  options.env = {{"BRAID_TRANSPORT", grid.transport}, {"BRAID_TIMEOUT", "60"},
                 {"BRAID_TEST_EMULATED_HOSTS", std::to_string(grid.emulated_hosts)}};
  return launch(options);
}

// Every rank printed "PASS <scenario>", none printed FAIL, the job exited 0 in time, and no
// shared-memory segment of the job is left.
inline void expect_every_rank_passed(const LaunchResult& r, const std::string& scenario, int ranks) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("PASS " + scenario), ranks) << r.output;
  EXPECT_EQ(r.count("FAIL"), 0) << r.output;
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

}  // namespace braid::testing
