// The network between the ranks failing or being abused while every process stays alive:
//   - a loopback master address other than 127.0.0.1 (the store must bind what was asked);
//   - a flood of connections that never prove the job token (the ranks must still get in);
//   - a link between two emulated hosts cut or black-holed mid-job (every rank must notice
//     within about BRAID_PEER_TIMEOUT, whatever BRAID_TIMEOUT is).
// Ranks are real processes, started by braid-run or by hand as torchrun would start them.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/unique_fd.h"
#include "braid/bootstrap/socket.h"
#include "launch.h"
#include "process_runner.h"

namespace braid::testing {
namespace {

using launcher_testing::ProcessResult;
using launcher_testing::RunningProcess;

// A port nobody listens on at `host` right now (bound, read back, released).
std::uint16_t free_port(const std::string& host) {
  UniqueFd fd = net::tcp_listen(host, 0);
  return net::local_port(fd.get());
}

bool can_listen_on(const std::string& host) {
  try {
    free_port(host);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The environment torchrun gives a rank, for ranks started without braid-run.
std::vector<std::string> torchrun_env(int rank, int world, const std::string& addr, std::uint16_t port) {
  return {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world), "MASTER_ADDR=" + addr,
          "MASTER_PORT=" + std::to_string(port), "BRAID_JOB_TOKEN=network-failure-test-token", "BRAID_TIMEOUT=90"};
}

// Environment a braid-run job inherits from the test must not steer these ranks.
const std::vector<std::string> kLauncherVariables{"BRAID_RANK", "BRAID_WORLD_SIZE", "BRAID_MASTER_ADDR",
                                                  "BRAID_MASTER_PORT", "BRAID_JOB_ID"};

// --- item: the store binds the loopback address it was given ------------------------------

class LoopbackMasterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LoopbackMasterTest, BraidRunJobFormsAtOnce) {
  if (!can_listen_on(GetParam())) GTEST_SKIP() << GetParam() << " cannot be bound on this machine";
  LaunchOptions o;
  o.ranks = 2;
  o.braid_run_flags = {"--master-addr", GetParam()};
  o.program = test_program_path("braid-test-rank");
  o.args = {"barrier"};
  o.env = {{"BRAID_TIMEOUT", "60"}};
  o.timeout_seconds = 40;
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << "the ranks dialled " << GetParam() << " while the store listened elsewhere:\n"
                            << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 20.0) << r.output;
}

TEST_P(LoopbackMasterTest, RanksStartedByHandFormAtOnce) {
  if (!can_listen_on(GetParam())) GTEST_SKIP() << GetParam() << " cannot be bound on this machine";
  const std::uint16_t port = free_port(GetParam());
  const std::string program = test_program_path("braid-test-rank");
  RunningProcess rank0({program, "barrier"}, torchrun_env(0, 2, GetParam(), port), kLauncherVariables);
  RunningProcess rank1({program, "barrier"}, torchrun_env(1, 2, GetParam(), port), kLauncherVariables);
  ProcessResult r1 = rank1.wait(std::chrono::seconds(40));
  ProcessResult r0 = rank0.wait(std::chrono::seconds(10));
  EXPECT_FALSE(r1.timed_out || r0.timed_out) << r0.out << r0.err << r1.out << r1.err;
  EXPECT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  EXPECT_EQ(r1.exit_code, 0) << r1.out << r1.err;
}

INSTANTIATE_TEST_SUITE_P(Addresses, LoopbackMasterTest, ::testing::Values("127.0.0.2", "::1", "localhost"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

// --- item: TLS on the links (BRAID_TLS) must be agreed by every rank ----------------------

// Rank 1 with BRAID_TLS=on, rank 0 without: both must stop with a Mismatch that names the two
// settings (not a garbled stream, not a hang), once rank 1 dials rank 0's TCP listener.
TEST(TlsAgreementTest, RanksThatDisagreeOnTlsStopWithAMismatchNamingBoth) {
  const std::uint16_t port = free_port("127.0.0.1");
  const std::string program = test_program_path("braid-test-rank");
  std::vector<std::string> env0 = torchrun_env(0, 2, "127.0.0.1", port), env1 = torchrun_env(1, 2, "127.0.0.1", port);
  for (auto* env : {&env0, &env1}) env->push_back("BRAID_TRANSPORT=tcp");
  env1.push_back("BRAID_TLS=on");
  RunningProcess rank0({program, "barrier"}, env0, kLauncherVariables);
  RunningProcess rank1({program, "barrier"}, env1, kLauncherVariables);
  ProcessResult r1 = rank1.wait(std::chrono::seconds(40));
  ProcessResult r0 = rank0.wait(std::chrono::seconds(20));
  EXPECT_FALSE(r1.timed_out || r0.timed_out) << r0.out << r0.err << r1.out << r1.err;
  for (const ProcessResult* r : {&r0, &r1}) {
    const std::string output = r->out + r->err;
    EXPECT_NE(r->exit_code, 0) << output;
    EXPECT_NE(output.find("braid::Mismatch"), std::string::npos) << output;
    EXPECT_NE(output.find("BRAID_TLS=on"), std::string::npos) << output;
    EXPECT_NE(output.find("BRAID_TLS=off"), std::string::npos) << output;
  }
}

// --- item: idle unauthenticated connections cannot starve the store -----------------------

// Connects to 127.0.0.1:port without waiting for the handshake to finish; invalid on failure.
UniqueFd start_connect(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) return {};
  return fd;
}

TEST(StoreFloodTest, IdleConnectionsWithoutHelloDoNotKeepRanksOut) {
  const std::uint16_t port = free_port("127.0.0.1");
  const std::string program = test_program_path("braid-test-rank");
  // Rank 0 (the store) with a low descriptor limit, as on a machine that keeps the default
  // small; BRAID_TIMEOUT=90, so only the store's own hello deadline and cap can let rank 1 in
  // within the 40 s this test waits.
  RunningProcess rank0({"/bin/sh", "-c", "ulimit -n 64 && exec \"$0\" barrier", program},
                       torchrun_env(0, 2, "127.0.0.1", port), kLauncherVariables);
  UniqueFd probe;
  for (int i = 0; i < 200 && !probe.valid(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      probe = net::tcp_connect("127.0.0.1", port, Deadline::after(Seconds(0.05)), {.op = "test"});
    } catch (const Error&) {
    }
  }
  ASSERT_TRUE(probe.valid()) << "rank 0's store never listened on port " << port;
  std::vector<UniqueFd> idle;  // 300 connections that never send a byte
  for (int i = 0; i < 300; ++i) {
    if (UniqueFd fd = start_connect(port); fd.valid()) idle.push_back(std::move(fd));
  }
  RunningProcess rank1({program, "barrier"}, torchrun_env(1, 2, "127.0.0.1", port), kLauncherVariables);
  ProcessResult r1 = rank1.wait(std::chrono::seconds(40));
  ProcessResult r0 = rank0.wait(std::chrono::seconds(10));
  EXPECT_FALSE(r1.timed_out) << "rank 1 could not get past " << idle.size() << " idle connections:\n"
                             << r1.out << r1.err << "\nrank 0:\n" << r0.out << r0.err;
  EXPECT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  EXPECT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  EXPECT_NE(r0.err.find("has not proven the job token"), std::string::npos) << "rank 0 says why it closed them:\n"
                                                                           << r0.err;
}

// --- item: a cut or black-holed link is noticed by every rank -----------------------------

bool have_netns() { return ::geteuid() == 0 && std::system("ip netns list >/dev/null 2>&1") == 0; }

// Two emulated hosts, network namespaces <prefix>0 and <prefix>1 joined by a veth pair
// (<prefix>v0 in host 0 at 10.77.0.1, <prefix>v1 in host 1 at 10.77.0.2), as
// bench/slow_link.sh builds them; removed again at destruction.
class TwoHosts {
 public:
  TwoHosts() : prefix_("bnf" + std::to_string(::getpid() % 100000)) {
    remove();
    ok_ = sh("ip netns add " + prefix_ + "0") && sh("ip netns add " + prefix_ + "1") &&
          sh("ip link add " + prefix_ + "v0 type veth peer name " + prefix_ + "v1") && join(0) && join(1);
  }
  ~TwoHosts() { remove(); }
  bool ok() const { return ok_; }
  const std::string& prefix() const { return prefix_; }

 private:
  static bool sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }
  bool join(int h) {
    const std::string ns = prefix_ + std::to_string(h), dev = prefix_ + "v" + std::to_string(h);
    return sh("ip link set " + dev + " netns " + ns) && sh("ip -n " + ns + " link set lo up") &&
           sh("ip -n " + ns + " addr add 10.77.0." + std::to_string(h + 1) + "/24 dev " + dev) &&
           sh("ip -n " + ns + " link set " + dev + " up");
  }
  void remove() {
    sh("ip netns del " + prefix_ + "0");
    sh("ip netns del " + prefix_ + "1");
  }
  std::string prefix_;
  bool ok_ = false;
};

struct Cut {
  std::string name;
  std::string command;  // run by rank 0 inside host 0; {p} is the namespace prefix
};

class PartitionTest : public ::testing::TestWithParam<Cut> {};

TEST_P(PartitionTest, EveryRankNoticesWithinAboutThePeerTimeout) {
  if (!have_netns()) GTEST_SKIP() << "needs root and ip netns to build the emulated hosts";
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not build the network namespaces";
  std::string cut = std::regex_replace(GetParam().command, std::regex("\\{p\\}"), hosts.prefix());
  LaunchOptions o;
  o.ranks = 4;
  // The ranks ignore braid-run's SIGTERM (see main.cc) and must each report on their own.
  o.braid_run_flags = {"--master-addr", "10.77.0.1", "--master-port", "29631", "--grace", "60"};
  o.program = std::string(BRAID_SOURCE_DIR) + "/bench/netns_rank.sh";
  o.args = {test_program_path("braid-test-rank"), "partition", "30", cut};
  o.env = {{"NETNS_PREFIX", hosts.prefix()}, {"RANKS_PER_HOST", "2"}, {"BRAID_TIMEOUT", "150"}};
  o.timeout_seconds = 100;  // before lost peers were detected, the ranks waited for BRAID_TIMEOUT
  LaunchResult r = launch(o);
  ASSERT_FALSE(r.timed_out) << r.output;
  auto cuts = r.lines_with("CUT at ");
  ASSERT_EQ(cuts.size(), 1u) << r.output;
  EXPECT_TRUE(r.lines_with("CUT-COMMAND-FAILED").empty()) << r.output;
  const double cut_at = std::stod(cuts[0].substr(cuts[0].find("CUT at ") + 7));
  auto lost = r.lines_with("LOST rank ");
  EXPECT_EQ(lost.size(), 4u) << "every rank must learn of the partition:\n" << r.output;
  std::regex when(R"(LOST rank (\d) at ([0-9.]+): )");
  for (const auto& line : lost) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, when)) << line;
    const double noticed_after = std::stod(m[2]) - cut_at;
    std::printf("  rank %s noticed %.1f s after the cut\n", m[1].str().c_str(), noticed_after);
    // BRAID_PEER_TIMEOUT is 8 s; the rest is the checks' 1 s period and a loaded 2-core machine.
    EXPECT_LT(noticed_after, 25.0) << line;
  }
  EXPECT_TRUE(r.lines_with("NO-ERROR").empty()) << r.output;
  for (const auto& id : job_ids_in(r)) EXPECT_TRUE(shm_leftovers(id).empty()) << "job " << id;
}

INSTANTIATE_TEST_SUITE_P(Cuts, PartitionTest,
                         ::testing::Values(Cut{"LinkDown", "ip link set {p}v0 down"},
                                           Cut{"Blackhole", "ip route add blackhole 10.77.0.2/32"}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace braid::testing
