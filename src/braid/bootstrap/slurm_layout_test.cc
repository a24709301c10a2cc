// The Slurm formats braid reads (slurm_layout.h), against the examples of Slurm's own docs
// (sbatch(1) "OUTPUT ENVIRONMENT VARIABLES", the hostlist syntax) and their malformed forms.
#include "braid/bootstrap/slurm_layout.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::slurm {
namespace {

TEST(SlurmLayout, FirstHostOfAHostList) {
  EXPECT_EQ(first_host("vm"), "vm");
  EXPECT_EQ(first_host("node1,node2"), "node1");
  EXPECT_EQ(first_host("node[07-09,12],gpu1"), "node07");  // zero padding kept
  EXPECT_EQ(first_host("node[12,3-4]"), "node12");          // the list's order, not the smallest
  EXPECT_EQ(first_host("rack[1-2]-n[3-4]"), "rack1-n3");
  EXPECT_EQ(first_host("gpu-a100-[001-004]"), "gpu-a100-001");
  for (const char* bad : {"", ",n1", "node[1-2", "node]1", "node[]"}) {
    EXPECT_THROW(first_host(bad), InvalidArgument) << bad;
  }
}

TEST(SlurmLayout, TasksPerNode) {
  EXPECT_EQ(tasks_per_node("2"), (std::vector<int>{2}));
  EXPECT_EQ(tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(tasks_per_node("3,1(x2)"), (std::vector<int>{3, 1, 1}));
  for (const char* bad : {"", "x", "2(x", "2(x0)", "0", "2,,1", "2(x2", "2;1"}) {
    EXPECT_THROW(tasks_per_node(bad), InvalidArgument) << bad;
  }
}

TEST(SlurmLayout, DefaultPortIsBelowTheEphemeralRangeAndDiffersPerStep) {
  EXPECT_EQ(default_store_port(1, 0), 10016);
  EXPECT_NE(default_store_port(1, 0), default_store_port(1, 1));
  EXPECT_NE(default_store_port(1, 0), default_store_port(2, 0));
  for (long long job : {0LL, 1LL, 12345LL, 999999999LL}) {
    for (long long step : {0LL, 7LL, 15LL}) {
      const int port = default_store_port(job, step);
      EXPECT_GE(port, 10000);
      EXPECT_LT(port, 30000);
    }
  }
}

}  // namespace
}  // namespace braid::slurm
