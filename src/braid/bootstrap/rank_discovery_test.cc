#include "braid/bootstrap/rank_discovery.h"

#include <map>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/bootstrap/slurm_layout.h"
#include "braid/bootstrap/socket.h"

namespace braid {
namespace {

using Env = std::map<std::string, std::string>;

EnvLookup lookup_in(const Env& vars) {
  return [vars](const env::Variable& var) -> std::optional<std::string> {
    auto it = vars.find(std::string(var.name));
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

RankInfo discover(const Env& vars) { return discover_rank_info(lookup_in(vars)); }

// The InvalidArgument message for `vars`, or "" when discovery succeeds.
std::string error_for(const Env& vars) {
  try {
    discover(vars);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(RankDiscovery, NothingSetIsASingleProcessJob) {
  RankInfo info = discover({});
  EXPECT_EQ(info.source, "single");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_world_size, 1);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  EXPECT_EQ(info.master_port, 0);
  EXPECT_EQ(info.job_token, "");
  EXPECT_EQ(info.job_id, "");
}

TEST(RankDiscovery, BraidRun) {
  RankInfo info = discover({{"BRAID_RANK", "2"}, {"BRAID_WORLD_SIZE", "4"}, {"BRAID_LOCAL_RANK", "2"},
                            {"BRAID_LOCAL_WORLD_SIZE", "4"}, {"BRAID_MASTER_PORT", "29500"},
                            {"BRAID_JOB_TOKEN", "abc"}, {"BRAID_JOB_ID", "job7"}});
  EXPECT_EQ(info.source, "braid-run");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_EQ(info.local_world_size, 4);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_EQ(info.job_token, "abc");
  EXPECT_EQ(info.job_id, "job7");
}

TEST(RankDiscovery, Torchrun) {
  RankInfo info = discover({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
                            {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 4);
  EXPECT_EQ(info.master_addr, "node0");
  EXPECT_EQ(info.master_port, 1234);
}

TEST(RankDiscovery, BraidVariablesWinOverForeignOnes) {
  RankInfo info = discover({{"BRAID_RANK", "1"}, {"BRAID_WORLD_SIZE", "2"}, {"RANK", "0"}, {"WORLD_SIZE", "9"},
                            {"MASTER_ADDR", "torchhost"}, {"MASTER_PORT", "1111"}, {"BRAID_MASTER_PORT", "2222"}});
  EXPECT_EQ(info.source, "braid-run");
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.master_port, 2222);
  EXPECT_EQ(info.master_addr, "torchhost");  // no BRAID_MASTER_ADDR: the foreign one is used
}

TEST(RankDiscovery, OpenMpiWithAddressFromBraidVariables) {
  RankInfo info = discover({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "6"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                            {"BRAID_MASTER_ADDR", "10.0.0.1"}, {"BRAID_MASTER_PORT", "40000"}});
  EXPECT_EQ(info.source, "openmpi");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 6);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_world_size, 3);
  EXPECT_EQ(info.master_addr, "10.0.0.1");
  EXPECT_EQ(info.master_port, 40000);
}

TEST(RankDiscovery, SlurmWithRepeatedTaskCount) {
  RankInfo info = discover({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"},
                            {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "29400"}});
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.rank, 7);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 3);
  EXPECT_EQ(info.local_world_size, 4);
  EXPECT_EQ(info.master_addr, "n1");
}

TEST(RankDiscovery, SlurmWithoutTasksPerNodeLeavesLocalSizeUnknown) {
  RankInfo info = discover({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"},
                            {"MASTER_PORT", "29400"}});
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, -1);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  EXPECT_TRUE(contains(describe(info), "rank 1 of 2 (local 1 of ?) from slurm")) << describe(info);
}

// What srun gives a task without --ntasks-per-node or a store address: the step's layout
// fills in the local size, the store host and a port (slurm_layout.h); set values still win.
TEST(RankDiscovery, SrunAloneGivesTheLocalSizeAndTheStore) {
  const std::map<std::string, std::string> srun{{"SLURM_PROCID", "5"},           {"SLURM_NTASKS", "7"},
                                                {"SLURM_LOCALID", "1"},          {"SLURM_NODEID", "1"},
                                                {"SLURM_STEP_TASKS_PER_NODE", "4,3"}, {"SLURM_STEP_NODELIST", "n[07-08]"},
                                                {"SLURM_JOB_ID", "42"},          {"SLURM_STEP_ID", "3"}};
  RankInfo info = discover(srun);
  EXPECT_EQ(info.local_world_size, 3);
  EXPECT_EQ(info.master_addr, "n07");
  EXPECT_EQ(info.master_port, slurm::default_store_port(42, 3));
  auto with = srun;
  with.insert({{"MASTER_ADDR", "head"}, {"MASTER_PORT", "29400"}, {"SLURM_NTASKS_PER_NODE", "2"}});
  info = discover(with);
  EXPECT_EQ(info.master_addr, "head");
  EXPECT_EQ(info.master_port, 29400);
  EXPECT_EQ(info.local_world_size, 2);
  with = srun;
  with["SLURM_NODEID"] = "2";  // the step has two nodes
  EXPECT_THROW(discover(with), InvalidArgument);
}

TEST(RankDiscovery, OneRankLauncherNeedsNoPort) {
  RankInfo info = discover({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.master_port, 0);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_world_size, 1);
}

TEST(RankDiscovery, MissingPortNamesTheVariable) {
  std::string error = error_for({{"BRAID_RANK", "0"}, {"BRAID_WORLD_SIZE", "2"}});
  EXPECT_TRUE(contains(error, "BRAID_MASTER_PORT")) << error;
  EXPECT_TRUE(contains(error, "MASTER_PORT")) << error;
}

TEST(RankDiscovery, MultiHostJobWithoutAddressIsAnError) {
  std::string error = error_for({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                 {"MASTER_PORT", "5000"}});
  EXPECT_TRUE(contains(error, "BRAID_MASTER_ADDR")) << error;
}

TEST(RankDiscovery, HalfSetLauncherIsAnError) {
  std::string error = error_for({{"RANK", "1"}});
  EXPECT_TRUE(contains(error, "WORLD_SIZE")) << error;
  error = error_for({{"BRAID_WORLD_SIZE", "2"}, {"BRAID_MASTER_PORT", "1"}});
  EXPECT_TRUE(contains(error, "BRAID_RANK")) << error;
}

TEST(RankDiscovery, OutOfRangeValuesNameVariableAndValue) {
  const Env port{{"MASTER_PORT", "29500"}};
  auto with = [&port](Env vars) {
    vars.insert(port.begin(), port.end());
    return error_for(vars);
  };
  std::string error = with({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_TRUE(contains(error, "RANK='4'")) << error;
  error = with({{"RANK", "-1"}, {"WORLD_SIZE", "4"}});
  EXPECT_TRUE(contains(error, "RANK='-1'")) << error;
  error = with({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
  EXPECT_TRUE(contains(error, "WORLD_SIZE='0'")) << error;
  error = with({{"RANK", "x"}, {"WORLD_SIZE", "4"}});
  EXPECT_TRUE(contains(error, "RANK='x' is not an integer")) << error;
  error = with({{"RANK", "1"}, {"WORLD_SIZE", "4 "}});
  EXPECT_TRUE(contains(error, "WORLD_SIZE='4 '")) << error;
  error = with({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_TRUE(contains(error, "LOCAL_RANK='2'")) << error;
  error = with({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "5"}});
  EXPECT_TRUE(contains(error, "LOCAL_WORLD_SIZE='5'")) << error;
  error = with({{"RANK", "1"}, {"WORLD_SIZE", "99999999999"}});
  EXPECT_TRUE(contains(error, "WORLD_SIZE='99999999999'")) << error;
}

TEST(RankDiscovery, BadPortsNameVariableAndValue) {
  EXPECT_TRUE(contains(error_for({{"MASTER_PORT", "0"}}), "MASTER_PORT='0'"));
  EXPECT_TRUE(contains(error_for({{"MASTER_PORT", "65536"}}), "MASTER_PORT='65536'"));
  EXPECT_TRUE(contains(error_for({{"BRAID_MASTER_PORT", "http"}}), "BRAID_MASTER_PORT='http'"));
  EXPECT_EQ(discover({{"MASTER_PORT", "65535"}}).master_port, 65535);
}

TEST(RankDiscovery, OverlongTokenIsRejectedWithoutEchoingIt) {
  std::string token(65, 's');
  std::string error = error_for({{"BRAID_JOB_TOKEN", token}});
  EXPECT_TRUE(contains(error, "BRAID_JOB_TOKEN")) << error;
  EXPECT_FALSE(contains(error, token)) << error;
}

TEST(RankDiscovery, HostId) {
  EXPECT_EQ(default_host_id(lookup_in({{"BRAID_HOST_ID", "rack3-node9"}})), "rack3-node9");
  std::string derived = default_host_id(lookup_in({}));
  EXPECT_EQ(derived.rfind(net::hostname() + ":", 0), 0u) << derived;  // Linux always has a boot id
  EXPECT_EQ(derived, default_host_id(lookup_in({})));
}

}  // namespace
}  // namespace braid
