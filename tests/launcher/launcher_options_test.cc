#include "braid/tools/braid_run/launcher_options.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "parse_helpers.h"

namespace braid::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LauncherOptions, Defaults) {
  LauncherOptions o = parse_ok({"-n", "4", "prog"});
  EXPECT_EQ(o.num_ranks, 4);
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(o.master_port, 0);
  EXPECT_DOUBLE_EQ(o.grace_seconds, 5.0);
  EXPECT_FALSE(o.timeout_seconds.has_value());
  EXPECT_TRUE(o.prefix_output);
  EXPECT_TRUE(o.extra_env.empty());
  EXPECT_THAT(o.command, ElementsAre("prog"));
}

TEST(LauncherOptions, ElasticAndMinRanks) {
  EXPECT_FALSE(parse_ok({"-n", "4", "prog"}).elastic);
  LauncherOptions o = parse_ok({"-n", "4", "--elastic", "--min-ranks", "2", "prog"});
  EXPECT_TRUE(o.elastic);
  EXPECT_EQ(o.min_ranks, 2);
  EXPECT_THAT(parse_error({"-n", "4", "--elastic", "--min-ranks", "5", "prog"}),
              HasSubstr("--min-ranks must be in 1..4 (-n), got 5"));
  EXPECT_THAT(parse_error({"-n", "4", "--elastic", "--min-ranks", "0", "prog"}), HasSubstr("--min-ranks must be in"));
  EXPECT_THAT(parse_error({"-n", "4", "--min-ranks", "2", "prog"}), HasSubstr("--min-ranks needs --elastic"));
  EXPECT_THAT(parse_error({"-n", "2", "--elastic", "--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint",
                           "10.0.0.1:29500", "prog"}),
              HasSubstr("--elastic runs on one host for now"));
}

TEST(LauncherOptions, EverythingAfterTheProgramBelongsToIt) {
  LauncherOptions o = parse_ok({"-n", "2", "prog", "-n", "5", "--grace", "1", "--", "x"});
  EXPECT_EQ(o.num_ranks, 2);
  EXPECT_DOUBLE_EQ(o.grace_seconds, 5.0);
  EXPECT_THAT(o.command, ElementsAre("prog", "-n", "5", "--grace", "1", "--", "x"));
}

TEST(LauncherOptions, SeparatorBeforeTheProgram) {
  EXPECT_THAT(parse_ok({"-n", "1", "--", "sh", "-c", "echo"}).command, ElementsAre("sh", "-c", "echo"));
  EXPECT_THAT(parse_ok({"-n", "1", "--", "-dash-prog"}).command, ElementsAre("-dash-prog"));
  EXPECT_THAT(parse_ok({"-n", "1", "--", "--", "x"}).command, ElementsAre("--", "x"));
}

TEST(LauncherOptions, AllFlags) {
  LauncherOptions o = parse_ok({"--nproc", "3", "--master-addr", "10.0.0.1", "--master-port", "29500", "--grace",
                                "0.5", "--timeout", "60", "--no-prefix", "--env", "A=1", "--env", "B=x=y", "prog"});
  EXPECT_EQ(o.num_ranks, 3);
  EXPECT_EQ(o.master_addr, "10.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_DOUBLE_EQ(o.grace_seconds, 0.5);
  ASSERT_TRUE(o.timeout_seconds.has_value());
  EXPECT_DOUBLE_EQ(*o.timeout_seconds, 60.0);
  EXPECT_FALSE(o.prefix_output);
  EXPECT_THAT(o.extra_env, ElementsAre("A=1", "B=x=y"));
  EXPECT_THAT(o.command, ElementsAre("prog"));
}

TEST(LauncherOptions, EnvTakesExactlyOneValue) {
  LauncherOptions o = parse_ok({"-n", "1", "--env", "A=1", "prog", "arg"});
  EXPECT_THAT(o.extra_env, ElementsAre("A=1"));
  EXPECT_THAT(o.command, ElementsAre("prog", "arg"));
}

TEST(LauncherOptions, Help) {
  ParseOutcome outcome = parse({"--help"});
  EXPECT_FALSE(outcome.options.has_value());
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(outcome.out, HasSubstr("braid-run -n N"));
  EXPECT_THAT(outcome.out, HasSubstr("--grace"));
  EXPECT_TRUE(outcome.err.empty());
}

TEST(LauncherOptions, RankCountIsRequiredAndPositive) {
  EXPECT_THAT(parse_error({"prog"}), HasSubstr("--nproc is required"));
  EXPECT_THAT(parse_error({"-n", "0", "prog"}), HasSubstr("-n must be at least 1, got 0"));
  EXPECT_THAT(parse_error({"-n", "-3", "prog"}), HasSubstr("-n"));
  EXPECT_THAT(parse_error({"-n", "four", "prog"}), HasSubstr("four"));
}

TEST(LauncherOptions, ProgramIsRequired) {
  EXPECT_THAT(parse_error({"-n", "2"}), HasSubstr("no program given"));
  EXPECT_THAT(parse_error({"-n", "2", "--"}), HasSubstr("no program given"));
}

TEST(LauncherOptions, UnknownOptionIsNotMistakenForTheProgram) {
  EXPECT_THAT(parse_error({"-n", "2", "--bogus", "prog"}), HasSubstr("unknown option '--bogus'"));
}

TEST(LauncherOptions, RejectsBadNumbers) {
  EXPECT_THAT(parse_error({"-n", "1", "--grace", "-1", "p"}), HasSubstr("--grace"));
  EXPECT_THAT(parse_error({"-n", "1", "--timeout", "0", "p"}), HasSubstr("--timeout"));
  EXPECT_THAT(parse_error({"-n", "1", "--timeout", "-5", "p"}), HasSubstr("--timeout"));
  EXPECT_THAT(parse_error({"-n", "1", "--master-port", "70000", "p"}), HasSubstr("--master-port"));
  EXPECT_THAT(parse_error({"-n", "1", "--master-addr", "", "p"}), HasSubstr("--master-addr"));
}

TEST(LauncherOptions, RejectsMalformedAndReservedEnv) {
  EXPECT_THAT(parse_error({"-n", "1", "--env", "NOVALUE", "p"}), HasSubstr("KEY=VALUE"));
  EXPECT_THAT(parse_error({"-n", "1", "--env", "=x", "p"}), HasSubstr("KEY=VALUE"));
  EXPECT_THAT(parse_error({"-n", "1", "--env", "BRAID_RANK=3", "p"}), HasSubstr("cannot set BRAID_RANK"));
  EXPECT_THAT(parse_error({"-n", "1", "--env", "BRAID_JOB_ID=x", "p"}), HasSubstr("cannot set BRAID_JOB_ID"));
  // Other BRAID_* settings are the user's to choose.
  EXPECT_THAT(parse_ok({"-n", "1", "--env", "BRAID_TIMEOUT=10", "p"}).extra_env, ElementsAre("BRAID_TIMEOUT=10"));
}

// -n 10000 with 20000 descriptors: refused up front, naming -n, the need, the limit and the fix.
TEST(LauncherOptions, DescriptorLimitIsCheckedUpFront) {
  LauncherOptions o = parse_ok({"-n", "10000", "/bin/true"});
  EXPECT_EQ(descriptors_needed(o), 20032u);
  std::string problem = check_descriptor_limit(o, 20000, 1u << 20);
  EXPECT_THAT(problem, HasSubstr("-n 10000 needs 20032 file descriptors"));
  EXPECT_THAT(problem, HasSubstr("limit (RLIMIT_NOFILE) is 20000"));
  EXPECT_THAT(problem, HasSubstr("ulimit -n 20032"));
  EXPECT_THAT(check_descriptor_limit(o, 20000, 20000), HasSubstr("the hard limit is 20000"));
  EXPECT_EQ(check_descriptor_limit(o, 20032, 20032), "");
  o.prefix_output = false;  // no pipes: the reserve alone
  EXPECT_EQ(check_descriptor_limit(o, 1024, 1024), "");
}

}  // namespace
}  // namespace braid::launcher
