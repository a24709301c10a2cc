// End to end: what each rank sees (environment) and what the user sees (output), through the
// real braid-run binary with /bin/sh scripts as rank programs.
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process_runner.h"

namespace braid::launcher_testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr const char* kPrintEnv =
    "echo $BRAID_RANK $BRAID_WORLD_SIZE $BRAID_LOCAL_RANK $BRAID_LOCAL_WORLD_SIZE "
    "$BRAID_MASTER_ADDR $BRAID_MASTER_PORT $BRAID_JOB_TOKEN $BRAID_JOB_ID";

struct RankView {
  int prefix_rank = -1;
  int rank = -1, world = -1, local_rank = -1, local_world = -1;
  std::string addr, port, token, job_id;
};

// Parses the lines kPrintEnv produces: "[r] rank world local_rank local_world addr port token id".
std::vector<RankView> parse_views(const std::string& out) {
  std::vector<RankView> views;
  for (const std::string& line : lines_of(out)) {
    std::smatch m;
    if (!std::regex_match(line, m, std::regex(R"(\[(\d+)\] (.*))"))) {
      ADD_FAILURE() << "unprefixed line: " << line;
      continue;
    }
    RankView v;
    v.prefix_rank = std::stoi(m[1]);
    std::istringstream in(m[2]);
    in >> v.rank >> v.world >> v.local_rank >> v.local_world >> v.addr >> v.port >> v.token >> v.job_id;
    views.push_back(v);
  }
  return views;
}

TEST(BraidRunEnv, EachRankSeesItsEnvironment) {
  ProcessResult r = run_braid({"-n", "3", "sh", "-c", kPrintEnv}, {}, {"BRAID_JOB_TOKEN"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<RankView> views = parse_views(r.out);
  ASSERT_EQ(views.size(), 3u) << r.out;
  std::set<int> ranks;
  for (const RankView& v : views) {
    ranks.insert(v.rank);
    EXPECT_EQ(v.prefix_rank, v.rank);
    EXPECT_EQ(v.world, 3);
    EXPECT_EQ(v.local_rank, v.rank);
    EXPECT_EQ(v.local_world, 3);
    EXPECT_EQ(v.addr, "127.0.0.1");
    EXPECT_EQ(v.port, views[0].port);
    EXPECT_EQ(v.token, views[0].token);
    EXPECT_EQ(v.job_id, views[0].job_id);
  }
  EXPECT_THAT(ranks, ElementsAre(0, 1, 2));
  int port = std::stoi(views[0].port);
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
  EXPECT_TRUE(std::regex_match(views[0].token, std::regex("[0-9a-f]{32}"))) << views[0].token;
  EXPECT_TRUE(std::regex_match(views[0].job_id, std::regex("[0-9a-f]{12}"))) << views[0].job_id;
}

TEST(BraidRunEnv, EveryJobGetsAFreshTokenAndId) {
  ProcessResult a = run_braid({"-n", "1", "sh", "-c", kPrintEnv}, {}, {"BRAID_JOB_TOKEN"});
  ProcessResult b = run_braid({"-n", "1", "sh", "-c", kPrintEnv}, {}, {"BRAID_JOB_TOKEN"});
  auto va = parse_views(a.out), vb = parse_views(b.out);
  ASSERT_EQ(va.size(), 1u);
  ASSERT_EQ(vb.size(), 1u);
  EXPECT_NE(va[0].token, vb[0].token);
  EXPECT_NE(va[0].job_id, vb[0].job_id);
}

TEST(BraidRunEnv, InheritsTheJobTokenFromItsEnvironment) {
  ProcessResult r = run_braid({"-n", "2", "sh", "-c", kPrintEnv}, {"BRAID_JOB_TOKEN=shared-secret"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto views = parse_views(r.out);
  ASSERT_EQ(views.size(), 2u);
  for (const RankView& v : views) EXPECT_EQ(v.token, "shared-secret");
}

TEST(BraidRunEnv, MasterAddressAndPortOptions) {
  ProcessResult r = run_braid({"--master-addr", "localhost", "--master-port", "29511", "-n", "2", "sh", "-c", kPrintEnv});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto views = parse_views(r.out);
  ASSERT_EQ(views.size(), 2u);
  for (const RankView& v : views) {
    EXPECT_EQ(v.addr, "localhost");
    EXPECT_EQ(v.port, "29511");
  }
}

TEST(BraidRunEnv, ExtraVariablesAndAStaleOuterRankIsReplaced) {
  ProcessResult r = run_braid({"--env", "FOO=one", "--env", "BAR=x y", "--env", "FOO=two", "-n", "2", "sh", "-c",
                               "echo \"$BRAID_RANK $FOO $BAR\""},
                              {"BRAID_RANK=99"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(lines_of(r.out), UnorderedElementsAre("[0] 0 two x y", "[1] 1 two x y"));
}

TEST(BraidRunEnv, ProgramIsFoundInPathAndGetsItsArguments) {
  ProcessResult r = run_braid({"-n", "1", "--", "printf", "%s|", "-n", "--grace", "a b"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0] -n|--grace|a b|\n");
}

TEST(BraidRunOutput, PrefixesStdoutAndStderrSeparately) {
  ProcessResult r = run_braid({"-n", "2", "sh", "-c", "echo out-$BRAID_RANK; echo err-$BRAID_RANK >&2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(lines_of(r.out), UnorderedElementsAre("[0] out-0", "[1] out-1"));
  EXPECT_THAT(lines_of(r.err), UnorderedElementsAre("[0] err-0", "[1] err-1"));
}

TEST(BraidRunOutput, PartialLinesOfDifferentRanksNeverInterleave) {
  // Each rank writes half a line, waits while the others do the same, then ends it.
  ProcessResult r = run_braid({"-n", "4", "sh", "-c", "printf begin-$BRAID_RANK-; sleep 0.3; echo end-$BRAID_RANK"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(lines_of(r.out), UnorderedElementsAre("[0] begin-0-end-0", "[1] begin-1-end-1",
                                                    "[2] begin-2-end-2", "[3] begin-3-end-3"));
}

TEST(BraidRunOutput, TrailingPartialLineIsFlushedAtExit) {
  ProcessResult r = run_braid({"-n", "1", "sh", "-c", "echo whole; printf no-newline; printf tail >&2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0] whole\n[0] no-newline\n");
  EXPECT_EQ(r.err, "[0] tail\n");
}

TEST(BraidRunOutput, ManyLinesArriveCompleteAndInOrder) {
  constexpr int kLines = 20000;
  ProcessResult r = run_braid({"-n", "3", "seq", std::to_string(kLines)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, int> last;  // rank -> last number seen
  int count = 0;
  for (const std::string& line : lines_of(r.out)) {
    // "[r] n", parsed by hand: std::regex would dominate the test's run time.
    std::size_t close = line.find("] ");
    ASSERT_TRUE(line.starts_with("[") && close != std::string::npos) << line;
    int rank = std::stoi(line.substr(1, close - 1));
    int value = std::stoi(line.substr(close + 2));
    ASSERT_EQ(value, last[rank] + 1) << "rank " << rank;
    last[rank] = value;
    ++count;
  }
  EXPECT_EQ(count, 3 * kLines);
}

TEST(BraidRunOutput, NoPrefixPassesOutputThroughUnchanged) {
  ProcessResult r = run_braid({"--no-prefix", "-n", "2", "sh", "-c", "echo hello; echo oops >&2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\nhello\n");
  EXPECT_EQ(r.err, "oops\noops\n");
}

TEST(BraidRunOutput, RanksReadEndOfFileOnStdin) {
  ProcessResult r = run_braid({"-n", "1", "sh", "-c", "cat; echo done"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0] done\n");
  EXPECT_LT(r.seconds, 20);
}

// --bind-to: each rank's kernel affinity (Cpus_allowed_list), as the rank itself reads it.
std::map<int, std::string> cpus_of_ranks(const std::vector<std::string>& bind_args, int ranks) {
  std::vector<std::string> args{"-n", std::to_string(ranks)};
  args.insert(args.end(), bind_args.begin(), bind_args.end());
  for (const char* word : {"sh", "-c", "grep Cpus_allowed_list /proc/self/status | cut -f2"}) args.emplace_back(word);
  ProcessResult r = run_braid(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int, std::string> cpus;
  for (const std::string& line : lines_of(r.out)) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(\[(\d+)\] (.*))"))) cpus[std::stoi(m[1])] = m[2];
  }
  return cpus;
}

TEST(BraidRunBind, CoreGivesEachRankOneCpuOfTheMask) {
  // braid-run's own mask is this test's (taskset or a cgroup may narrow it): read it the same way.
  std::map<int, std::string> unbound = cpus_of_ranks({"--bind-to", "none"}, 2);
  ASSERT_EQ(unbound.size(), 2u);
  EXPECT_EQ(unbound[0], unbound[1]);  // both inherit the whole mask
  std::map<int, std::string> bound = cpus_of_ranks({"--bind-to", "core"}, 2);
  ASSERT_EQ(bound.size(), 2u);
  for (const auto& entry : bound) {
    EXPECT_THAT(entry.second, ::testing::MatchesRegex("[0-9]+")) << "rank " << entry.first << " not bound to one CPU";
  }
  if (unbound[0].find_first_of(",-") != std::string::npos) {  // two CPUs or more
    EXPECT_NE(bound[0], bound[1]);
  }
}

// A rank bound alone to a CPU is told which (BRAID_OWN_CPU, the CPU of its mask), so that its
// waits do not yield as if ranks shared its core; an unbound or wrapped job's ranks are not,
// also when braid-run inherited the variable.
TEST(BraidRunBind, RanksAloneOnTheirCpuAreToldWhichAndNoOtherIs) {
  auto own_cpus = [](std::vector<std::string> args) {
    args.insert(args.end(), {"--env", "BRAID_OWN_CPU=99", "sh", "-c",
                             "echo \"own=$BRAID_OWN_CPU mask=$(grep Cpus_allowed_list /proc/self/status | cut -f2)\""});
    ProcessResult r = run_braid(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return lines_of(r.out);
  };
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (cpus >= 2) {
    for (const std::string& line : own_cpus({"-n", "2", "--bind-to", "core"})) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(line, m, std::regex(R"(\[\d+\] own=(\d+) mask=(\d+))"))) << line;
      EXPECT_EQ(m[1], m[2]) << line;
    }
  }
  for (const std::string& line : own_cpus({"-n", "2", "--bind-to", "none"})) EXPECT_THAT(line, HasSubstr("own= ")) << line;
  for (const std::string& line : own_cpus({"-n", std::to_string(cpus + 1), "--bind-to", "core"})) {
    EXPECT_THAT(line, HasSubstr("own= ")) << "ranks wrapped around the CPUs share them: " << line;
  }
}

TEST(BraidRunBind, AutoLeavesRanksUnboundWhenTheyOutnumberCpus) {
  // One rank more than the machine has CPUs outnumbers braid-run's mask, whatever it is.
  const int ranks = static_cast<int>(std::thread::hardware_concurrency()) + 1;
  std::map<int, std::string> cpus = cpus_of_ranks({}, ranks);
  ASSERT_EQ(cpus.size(), static_cast<std::size_t>(ranks));
  for (const auto& entry : cpus) EXPECT_EQ(entry.second, cpus[0]) << "rank " << entry.first;
}

}  // namespace
}  // namespace braid::launcher_testing
