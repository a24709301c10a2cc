// braid-run's multi-node flags (node_options.h), the environment of a multi-node rank
// (node_environment.h) and the small pure pieces of the node rendezvous and watch.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "parse_helpers.h"

#include "braid/tools/braid_run/launcher_options.h"
#include "braid/tools/braid_run/node_environment.h"
#include "braid/tools/braid_run/node_rendezvous.h"
#include "braid/tools/braid_run/node_watch.h"

namespace braid::launcher {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

TEST(NodeOptions, TorchrunSpellingsParse) {
  LauncherOptions o = parse_ok({"--nnodes", "3", "--node_rank", "2", "--master_addr", "10.0.0.1", "--master_port",
                                "29511", "--nproc_per_node", "4", "prog"});
  EXPECT_EQ(o.nodes.num_nodes, 3);
  EXPECT_EQ(o.nodes.node_rank, 2);
  EXPECT_EQ(o.master_addr, "10.0.0.1");
  EXPECT_EQ(o.master_port, 29511);
  EXPECT_EQ(o.num_ranks, 4);
  EXPECT_TRUE(is_multinode(o));
}

TEST(NodeOptions, RdzvEndpointSetsTheStoreAddress) {
  LauncherOptions v4 = parse_ok({"--nnodes", "2", "--rdzv-endpoint", "node0:29400", "-n", "1", "prog"});
  EXPECT_EQ(v4.master_addr, "node0");
  EXPECT_EQ(v4.master_port, 29400);
  LauncherOptions v6 = parse_ok({"--nnodes", "2", "--rdzv_endpoint", "[fd00::1]:29401", "-n", "1", "prog"});
  EXPECT_EQ(v6.master_addr, "fd00::1");
  EXPECT_EQ(v6.master_port, 29401);
  LauncherOptions bare = parse_ok({"--nnodes", "2", "--rdzv-endpoint", "node0", "-n", "1", "prog"});
  EXPECT_EQ(bare.master_port, kDefaultNodeStorePort);
}

TEST(NodeOptions, AMultiNodeJobDefaultsToTorchrunsPort) {
  EXPECT_EQ(parse_ok({"--nnodes", "2", "-n", "1", "prog"}).master_port, kDefaultNodeStorePort);
  EXPECT_EQ(parse_ok({"-n", "1", "prog"}).master_port, 0);  // one host: a free port, as before
}

TEST(NodeOptions, MistakesAreUsageErrors) {
  EXPECT_THAT(parse_error({"--nnodes", "2", "--node-rank", "2", "-n", "1", "prog"}),
              HasSubstr("--node-rank must be in 0..1 (--nnodes 2), got 2"));
  EXPECT_THAT(parse_error({"--nnodes", "0", "-n", "1", "prog"}), HasSubstr("--nnodes must be at least 1"));
  EXPECT_THAT(parse_error({"--nnodes", "2", "--rdzv-endpoint", "a:1", "--master-port", "2", "-n", "1", "prog"}),
              HasSubstr("give one spelling"));
  EXPECT_THAT(parse_error({"--nnodes", "2", "--rdzv-endpoint", "a:99999", "-n", "1", "prog"}),
              HasSubstr("1..65535"));
  EXPECT_THAT(parse_error({"--nnodes", "2", "--rdzv-endpoint", "[::1", "-n", "1", "prog"}), HasSubstr("missing ']'"));
  EXPECT_THAT(parse_error({"--nnodes", "2", "--join-timeout", "0", "-n", "1", "prog"}),
              HasSubstr("--join-timeout must be"));
  EXPECT_THAT(parse_error({"--nnodes", "2", "--env", "LOCAL_RANK=3", "-n", "1", "prog"}),
              HasSubstr("--env cannot set LOCAL_RANK"));
}

TEST(NodeEnvironment, RanksAreNodeMajorWithTorchrunsNamesToo) {
  LauncherOptions o = parse_ok({"--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "-n", "3", "prog"});
  JobIdentity job{.master_addr = "10.0.0.1", .master_port = 29501, .job_token = "t", .job_id = "abc"};
  std::vector<std::string> env = node_rank_environment({}, o, job, 2);
  for (const char* expected : {"BRAID_RANK=5", "BRAID_WORLD_SIZE=6", "BRAID_LOCAL_RANK=2", "BRAID_LOCAL_WORLD_SIZE=3",
                               "BRAID_NODE_RANK=1", "BRAID_NUM_NODES=2", "RANK=5", "WORLD_SIZE=6", "LOCAL_RANK=2",
                               "LOCAL_WORLD_SIZE=3", "GROUP_RANK=1", "BRAID_MASTER_PORT=29501"}) {
    EXPECT_THAT(env, Contains(std::string(expected)));
  }
}

TEST(NodeRendezvous, MissingNodesAreListed) {
  EXPECT_EQ(missing_nodes(4, [](int node) { return node == 0 || node == 2; }), "1, 3");
  EXPECT_EQ(missing_nodes(2, [](int) { return true; }), "");
}

TEST(NodeWatch, FailuresRoundTripThroughTheStoreValue) {
  NodeFailure f = decode_failure(encode_failure({137, "node 1: rank 3 (pid 9) was killed"}));
  EXPECT_EQ(f.exit_code, 137);
  EXPECT_EQ(f.message, "node 1: rank 3 (pid 9) was killed");
  NodeFailure odd = decode_failure("garbage");
  EXPECT_EQ(odd.exit_code, 1);
  EXPECT_EQ(odd.message, "garbage");
}

}  // namespace
}  // namespace braid::launcher
