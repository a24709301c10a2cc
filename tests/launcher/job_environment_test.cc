#include "braid/tools/braid_run/job_environment.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/base/unique_fd.h"
#include "braid/tools/braid_run/free_port.h"

namespace braid::launcher {
namespace {

using ::testing::Contains;
using ::testing::Not;

JobIdentity sample_job() { return {.master_addr = "127.0.0.1", .master_port = 29500, .job_token = "tok", .job_id = "abc"}; }

std::vector<std::string> entries_named(const std::vector<std::string>& env, const std::string& key) {
  std::vector<std::string> out;
  std::copy_if(env.begin(), env.end(), std::back_inserter(out),
               [&](const std::string& e) { return e.starts_with(key + "="); });
  return out;
}

TEST(RankEnvironment, SetsEveryLauncherVariable) {
  std::vector<std::string> env = rank_environment({}, {}, sample_job(), 2, 4);
  EXPECT_THAT(env, Contains("BRAID_RANK=2"));
  EXPECT_THAT(env, Contains("BRAID_WORLD_SIZE=4"));
  EXPECT_THAT(env, Contains("BRAID_LOCAL_RANK=2"));
  EXPECT_THAT(env, Contains("BRAID_LOCAL_WORLD_SIZE=4"));
  EXPECT_THAT(env, Contains("BRAID_MASTER_ADDR=127.0.0.1"));
  EXPECT_THAT(env, Contains("BRAID_MASTER_PORT=29500"));
  EXPECT_THAT(env, Contains("BRAID_JOB_TOKEN=tok"));
  EXPECT_THAT(env, Contains("BRAID_JOB_ID=abc"));
  // All but BRAID_ELASTIC (set only with --elastic) and BRAID_ELASTIC_JOIN (only for a restarted rank).
  EXPECT_EQ(env.size(), launcher_variables().size() - 2);
}

TEST(RankEnvironment, ElasticSetsMinRanksAndAPlainJobDropsAnInheritedOne) {
  EXPECT_THAT(rank_environment({}, {}, sample_job(), 0, 4, 3), Contains("BRAID_ELASTIC=3"));
  std::vector<std::string> base{"BRAID_ELASTIC=2", "BRAID_ELASTIC_JOIN=new", "HOME=/root"};
  std::vector<std::string> env = rank_environment(base, {}, sample_job(), 0, 4);
  EXPECT_THAT(env, Not(Contains(::testing::StartsWith("BRAID_ELASTIC="))));
  // An inherited newcomer flag would make every rank of the job try to join it.
  EXPECT_THAT(env, Not(Contains(::testing::StartsWith("BRAID_ELASTIC_JOIN="))));
  EXPECT_THAT(env, Contains("HOME=/root"));
}

TEST(RankEnvironment, ReplacesInheritedValuesAndKeepsTheRest) {
  std::vector<std::string> base{"PATH=/bin", "BRAID_RANK=7", "BRAID_TIMEOUT=9", "EMPTY="};
  std::vector<std::string> env = rank_environment(base, {}, sample_job(), 0, 1);
  EXPECT_THAT(entries_named(env, "BRAID_RANK"), ::testing::ElementsAre("BRAID_RANK=0"));
  EXPECT_THAT(env, Contains("PATH=/bin"));
  EXPECT_THAT(env, Contains("BRAID_TIMEOUT=9"));
  EXPECT_THAT(env, Contains("EMPTY="));
}

TEST(RankEnvironment, ExtraVariablesLaterOnesWin) {
  std::vector<std::string> base{"FOO=inherited"};
  std::vector<std::string> extra{"FOO=first", "BAR=x=y", "FOO=second"};
  std::vector<std::string> env = rank_environment(base, extra, sample_job(), 0, 1);
  EXPECT_THAT(entries_named(env, "FOO"), ::testing::ElementsAre("FOO=second"));
  EXPECT_THAT(env, Contains("BAR=x=y"));
}

TEST(RankEnvironment, OwnCpuIsSetForALoneRankAndRemovedOtherwise) {
  std::vector<std::string> env{"BRAID_OWN_CPU=9", "BRAID_OWN_CPUS=1"};
  set_own_cpu(env, 3);
  EXPECT_THAT(env, ::testing::UnorderedElementsAre("BRAID_OWN_CPU=3", "BRAID_OWN_CPUS=1"));
  set_own_cpu(env, -1);  // an inherited claim must not survive into an unbound job
  EXPECT_THAT(env, ::testing::ElementsAre("BRAID_OWN_CPUS=1"));
}

TEST(RankEnvironment, SetVariableMatchesWholeNames) {
  std::vector<std::string> env{"AB=1", "A=2"};
  set_variable(env, "A", "3");
  EXPECT_THAT(env, ::testing::ElementsAre("AB=1", "A=3"));
  set_variable(env, "C", "");
  EXPECT_THAT(env, Contains("C="));
}

TEST(JobIdentity, FreshTokenAndIdAndAFreePort) {
  LauncherOptions options;
  JobIdentity a = make_job_identity(options);
  JobIdentity b = make_job_identity(options);
  EXPECT_EQ(a.master_addr, "127.0.0.1");
  EXPECT_GT(a.master_port, 0);
  EXPECT_LE(a.master_port, 65535);
  EXPECT_EQ(a.job_id.size(), 12u);
  EXPECT_NE(a.job_id, b.job_id);
  if (!env::get(env::kJobToken)) {
    EXPECT_EQ(a.job_token.size(), 32u);
    EXPECT_NE(a.job_token, b.job_token);
  }
}

TEST(JobIdentity, GivenPortIsKept) {
  LauncherOptions options;
  options.master_port = 4242;
  EXPECT_EQ(make_job_identity(options).master_port, 4242);
}

TEST(FreePort, PickedPortCanBeBound) {
  int port = pick_free_port("127.0.0.1");
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  // Another process could take it in between; on an idle loopback that never happens in practice.
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << "port " << port;
}

TEST(FreePort, ForeignAddressIsASystemError) {
  std::ifstream nonlocal_bind("/proc/sys/net/ipv4/ip_nonlocal_bind");
  int allowed = 0;
  if (nonlocal_bind >> allowed && allowed != 0) GTEST_SKIP() << "this host lets any address be bound";
  // TEST-NET-1 (RFC 5737) is never an address of this host. (No unresolvable-name case: it
  // would depend on a DNS server answering quickly.)
  EXPECT_THROW(pick_free_port("192.0.2.1"), SystemError);
}

}  // namespace
}  // namespace braid::launcher
