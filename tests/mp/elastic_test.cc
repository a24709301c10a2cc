// Elastic shrink through real ranks under braid-run --elastic (comm/elastic_group.h,
// bootstrap/membership.h): one of 4 ranks is SIGKILLed in the middle of an allreduce (BRAID_FAULT);
// the 3 survivors agree on one membership, connect a communicator of 3 densely numbered ranks
// without restarting, and every allreduce after is exactly the survivors' sum. Failure paths:
// fewer survivors than --min-ranks fails the job naming it; an elastic rank under a plain
// braid-run is refused naming BRAID_ELASTIC.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

constexpr int kRounds = 8;

LaunchOptions elastic_job(int ranks, const std::string& fault, const std::string& transport = "auto") {
  LaunchOptions o;
  o.ranks = ranks;
  o.braid_run_flags = {"--elastic"};
  o.program = test_program_path("braid-elastic-rank");
  o.args = {std::to_string(kRounds)};
  // Short timeouts: a survivor that missed the loss must fail within the test, not hang it.
  o.env = {{"BRAID_TRANSPORT", transport}, {"BRAID_TIMEOUT", "20"}, {"BRAID_FAULT", fault}};
  o.timeout_seconds = 60;
  return o;
}

// Sum of (id + 1) over the survivors: every element of round r's result is that times (r + 1).
void expect_survivors_finish(const LaunchResult& r, int victim, int survivors_sum) {
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count(fmt::format("braid-run: rank {} (pid", victim)), 1) << r.output;
  EXPECT_EQ(r.count("--elastic: 3 ranks continue without it"), 1) << r.output;
  EXPECT_EQ(r.count("SHRUNK generation 1"), 3) << r.output;
  EXPECT_EQ(r.count("WRONG"), 0) << r.output;
  EXPECT_EQ(r.count("ERROR"), 0) << r.output;
  // The last round ran on the 3 survivors and summed exactly their contributions.
  EXPECT_EQ(r.count(fmt::format("ROUND {} OK size 3 sum {}", kRounds - 1, survivors_sum * kRounds)), 3) << r.output;
  EXPECT_EQ(r.count(fmt::format("DONE rounds {} size 3 generation 1", kRounds)), 3) << r.output;
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

class ElasticShrinkTest : public ::testing::TestWithParam<std::string> {};

// Rank 2 dies at its 4th allreduce: the survivors are ids 0, 1, 3 (sum of id+1: 7).
TEST_P(ElasticShrinkTest, KilledRankLeavesThreeSurvivorsWhoseAllreducesAreExact) {
  LaunchResult r = launch(elastic_job(4, "rank=2,op=allreduce,nth=4,kind=kill", GetParam()));
  expect_survivors_finish(r, 2, 1 + 2 + 4);
}

INSTANTIATE_TEST_SUITE_P(Transports, ElasticShrinkTest, ::testing::Values("auto", "tcp"));

// Rank 0 dies: the store is braid-run's, so it stays; the survivors renumber 1, 2, 3 as 0, 1, 2.
TEST(ElasticTest, LosingRankZeroKeepsTheStoreAndTheJob) {
  LaunchResult r = launch(elastic_job(4, "rank=0,op=allreduce,nth=3,kind=kill"));
  expect_survivors_finish(r, 0, 2 + 3 + 4);
}

TEST(ElasticTest, FewerSurvivorsThanMinRanksFailsTheJobNamingIt) {
  LaunchOptions o = elastic_job(3, "rank=1,op=allreduce,nth=2,kind=kill");
  o.braid_run_flags = {"--elastic", "--min-ranks", "3"};
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("braid-run: rank 1 (pid"), 1) << r.output;
  EXPECT_EQ(r.count("fewer than --min-ranks 3"), 1) << r.output;
  EXPECT_EQ(r.count("DONE"), 0) << r.output;
}

TEST(ElasticTest, ElasticRankUnderPlainBraidRunIsRefusedNamingTheVariable) {
  LaunchOptions o = elastic_job(2, "");
  o.braid_run_flags = {};
  o.env.erase("BRAID_FAULT");
  LaunchResult r = launch(o);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_GE(r.count("BRAID_ELASTIC is not set"), 1) << r.output;
}

}  // namespace
}  // namespace braid::testing
