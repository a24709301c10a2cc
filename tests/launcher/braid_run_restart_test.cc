// End to end: braid-run --elastic --max-restarts. A lost rank's program starts again in its slot
// as a newcomer (a fresh member id in BRAID_ELASTIC_JOIN, never its old rank), with one line
// per restart; once the restarts are used up the job goes on shrunk or fails per --min-ranks.
// The rejoin itself (the newcomer admitted at a step boundary) is train_elastic_test's.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process_runner.h"

namespace braid::launcher_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(BraidRunRestart, ALostRankStartsAgainAsANewMember) {
  ProcessResult r = run_braid({"-n", "2", "--elastic", "--max-restarts", "1", "sh", "-c",
                               "[ -n \"$BRAID_ELASTIC_JOIN\" ] && { echo \"newcomer $BRAID_ELASTIC_JOIN\"; exit 0; }; "
                               "[ $BRAID_RANK = 1 ] && exit 3; sleep 1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::MatchesRegex(
                         R"(braid-run: rank 1 \(pid [0-9]+\) exited with code 3; --elastic: restarting it as member 2 \(pid [0-9]+; restart 1 of --max-restarts 1\), which rejoins at a step boundary
)"));
  // Member id 2 (the launch world is 0..1), not its old rank 1.
  EXPECT_THAT(r.out, HasSubstr("[2] newcomer 2\n"));
}

TEST(BraidRunRestart, RestartsUsedUpLeaveTheJobShrunk) {
  ProcessResult r = run_braid({"-n", "2", "--elastic", "--max-restarts", "1", "sh", "-c",
                               "[ $BRAID_RANK = 1 ] && exit 3; sleep 2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("restarting it as member 2"));
  EXPECT_THAT(r.err, HasSubstr("rank 2 (pid "));
  EXPECT_THAT(r.err, HasSubstr("exited with code 3 (--max-restarts 1 used up); --elastic: 1 rank continue without it"));
}

TEST(BraidRunRestart, RestartsUsedUpBelowMinRanksFailTheJob) {
  ProcessResult r = run_braid({"-n", "2", "--elastic", "--max-restarts", "1", "--min-ranks", "2", "sh", "-c",
                               "[ $BRAID_RANK = 1 ] && exit 3; sleep 60"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(--max-restarts 1 used up); --elastic: only 1 rank left, fewer than --min-ranks 2; "
                               "terminating them"));
  EXPECT_LT(r.seconds, 30.0);  // not the 60 s sleep: the job stopped
}

TEST(BraidRunRestart, MaxRestartsNeedsElastic) {
  ProcessResult r = run_braid({"-n", "2", "--max-restarts", "1", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--max-restarts needs --elastic"));
  EXPECT_THAT(run_braid({"-n", "2", "--elastic", "--max-restarts", "-1", "true"}).err,
              HasSubstr("--max-restarts must be >= 0, got -1"));
  EXPECT_THAT(r.err, Not(HasSubstr("restarting")));
}

}  // namespace
}  // namespace braid::launcher_testing
