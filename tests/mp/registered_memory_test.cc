// Registered memory (alloc_registered) through real ranks on one host: the zero-copy
// allgather, broadcast and reduce_scatter (in place and not, with one rank unregistered), the
// zero-copy allreduce over every dtype, in place and not, uneven and zero counts, and bit-for-bit rank
// order; mixed registration takes the single-copy path (or the staged one) on every rank;
// allreduce single_copy on ordinary memory, and refused by one rank's BRAID_CROSS_MEMORY=0
// (the staged path on every rank); buffers freed and
// reallocated between calls; a peer with another count still raises Mismatch; register_memory
// refuses private memory. Nothing may be left in /dev/shm. Scenarios: programs/registered_rank.cc.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

struct Case {
  std::string scenario;
  int ranks;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.scenario + "_" + std::to_string(info.param.ranks) + "ranks";
  std::replace(name.begin(), name.end(), '-', '_');  // test names take letters, digits and '_'
  return name;
}

class RegisteredMemoryTest : public ::testing::TestWithParam<Case> {};

TEST_P(RegisteredMemoryTest, Scenario) {
  LaunchOptions o;
  o.ranks = GetParam().ranks;
  o.program = test_program_path("braid-registered-rank");
  o.args = {GetParam().scenario};
  o.env = {{"BRAID_TIMEOUT", "30"}};
  o.timeout_seconds = 90;
  LaunchResult r = launch(o);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("OK " + GetParam().scenario), GetParam().ranks) << r.output;
  // Every rank raised Mismatch (and said so) instead of hanging or reading the wrong bytes.
  if (GetParam().scenario == "mismatch") {
    EXPECT_EQ(r.count("MISMATCH rank"), GetParam().ranks) << r.output;
  }
  EXPECT_EQ(r.count("FAIL"), 0) << r.output;
  const auto jobs = job_ids_in(r);
  EXPECT_FALSE(jobs.empty()) << r.output;
  for (const auto& id : jobs) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, RegisteredMemoryTest,
                         ::testing::Values(Case{"grid", 2}, Case{"grid", 3}, Case{"grid", 4}, Case{"others", 2},
                                           Case{"others", 3}, Case{"others", 4}, Case{"mixed", 2},
                                           Case{"mixed", 3}, Case{"realloc", 2}, Case{"realloc", 4},
                                           Case{"mismatch", 2}, Case{"mismatch", 3}, Case{"register", 2},
                                           Case{"single-copy", 2}, Case{"single-copy", 3}, Case{"single-copy", 4},
                                           Case{"single-copy-refused", 2}, Case{"single-copy-refused", 3}),
                         case_name);

}  // namespace
}  // namespace braid::testing
