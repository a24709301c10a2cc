// The alpha-beta-gamma formulas per (operation, algorithm), and the presets.
#include "braid/plan/cost_model.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::plan {
namespace {

LinkParams link(double alpha, double bandwidth, double gamma = 0) { return {"test", alpha, bandwidth, gamma, ""}; }

double seconds(Op op, Algorithm algo, double bytes, int n, const LinkParams& l) {
  return collective_time({.op = op, .algorithm = algo, .bytes = bytes, .ranks = n, .link = l})->value;
}

TEST(CostModelTest, AllreduceFormulas) {
  const LinkParams l = link(1e-6, 1e9, 1e-10);
  const double s = 1e6;
  EXPECT_DOUBLE_EQ(seconds(Op::kAllreduce, Algorithm::kRing, s, 4, l), 6e-6 + 1.5 * s / 1e9 + 0.75 * s * 1e-10);
  EXPECT_DOUBLE_EQ(seconds(Op::kAllreduce, Algorithm::kTree, s, 4, l), 4 * (1e-6 + s / 1e9) + 2 * s * 1e-10);
  EXPECT_DOUBLE_EQ(seconds(Op::kAllreduce, Algorithm::kRecursiveDoubling, s, 4, l), 2 * (1e-6 + s / 1e9 + s * 1e-10));
  EXPECT_DOUBLE_EQ(seconds(Op::kAllreduce, Algorithm::kRabenseifner, s, 4, l), 4e-6 + 1.5 * s / 1e9 + 0.75 * s * 1e-10);
  // Not a power of two: two more full-size steps for recursive doubling.
  EXPECT_DOUBLE_EQ(seconds(Op::kAllreduce, Algorithm::kRecursiveDoubling, s, 5, l), 5 * (1e-6 + s / 1e9) + 4 * s * 1e-10);
  EXPECT_DOUBLE_EQ(seconds(Op::kAllreduce, Algorithm::kRing, s, 1, l), 0);
}

TEST(CostModelTest, LatencyBoundSmallAndBandwidthBoundLarge) {
  const LinkParams l = link(5e-6, 10e9);
  // Tiny messages on many ranks: log n steps beat 2(n-1).
  EXPECT_LT(seconds(Op::kAllreduce, Algorithm::kRecursiveDoubling, 8, 64, l),
            seconds(Op::kAllreduce, Algorithm::kRing, 8, 64, l));
  // Large messages: ring / Rabenseifner send 2(n-1)/n S, recursive doubling log2 n x S.
  EXPECT_LT(seconds(Op::kAllreduce, Algorithm::kRing, 1e9, 64, l),
            seconds(Op::kAllreduce, Algorithm::kRecursiveDoubling, 1e9, 64, l));
  EXPECT_LT(seconds(Op::kAllreduce, Algorithm::kRabenseifner, 1e9, 64, l),
            seconds(Op::kAllreduce, Algorithm::kRing, 1e9, 64, l));
}

TEST(CostModelTest, OtherOperations) {
  const LinkParams l = link(1e-6, 1e9);
  EXPECT_DOUBLE_EQ(seconds(Op::kAllgather, Algorithm::kRing, 4e6, 4, l), 3e-6 + 3e6 / 1e9);
  EXPECT_DOUBLE_EQ(seconds(Op::kReduceScatter, Algorithm::kRing, 4e6, 4, l), 3e-6 + 3e6 / 1e9);
  EXPECT_DOUBLE_EQ(seconds(Op::kBroadcast, Algorithm::kTree, 4e6, 8, l), 3 * (1e-6 + 4e6 / 1e9));
  EXPECT_DOUBLE_EQ(seconds(Op::kSendRecv, Algorithm::kRing, 4e6, 2, l), 1e-6 + 4e6 / 1e9);
  EXPECT_FALSE(collective_time({.op = Op::kBroadcast, .algorithm = Algorithm::kRabenseifner, .bytes = 1, .ranks = 4,
                                .link = l}));
}

TEST(CostModelTest, HierarchicalUsesBothLinks) {
  CollectiveInput in{.op = Op::kAllreduce, .algorithm = Algorithm::kHierarchical, .bytes = 1e9, .ranks = 16,
                     .link = link_preset("nvlink"), .ranks_per_node = 8, .inter_link = link_preset("ib-ndr")};
  const double hier = collective_time(in)->value;
  // Inter-node part alone: a ring allreduce of S over 2 nodes at 50 GB/s = 20 ms.
  EXPECT_GT(hier, 1e9 / 50e9);
  // Much faster than a flat ring whose every hop pays the inter-node link.
  const double flat = seconds(Op::kAllreduce, Algorithm::kRing, 1e9, 16, link_preset("ib-ndr"));
  EXPECT_LT(hier, flat);
  in.ranks = 12;  // 12 is not a multiple of 8 ranks per node
  EXPECT_FALSE(collective_time(in));
}

// host_striped: intra ring reduce-scatter + allgather over S, and a ring allreduce of S/g per
// stripe among the nodes. Against hierarchical (gather to a leader and back, the whole buffer
// across nodes) it moves half the intra-node bytes and a g-th of the inter-node ones.
TEST(CostModelTest, HostStripedShardsTheInterNodeAllreduce) {
  const LinkParams intra = link(1e-6, 1e11), inter = link(5e-6, 1e10);
  CollectiveInput in{.op = Op::kAllreduce, .algorithm = Algorithm::kHostStriped, .bytes = 1e9, .ranks = 16,
                     .link = intra, .ranks_per_node = 8, .inter_link = inter};
  // intra: 14 alpha_i + 1.75 S / 1e11; inter (N = 2): 2 alpha_e + 1 x (S / 8) / 1e10.
  EXPECT_DOUBLE_EQ(collective_time(in)->value, 14e-6 + 1.75e9 / 1e11 + 2 * 5e-6 + 1.25e8 / 1e10);
  in.algorithm = Algorithm::kHierarchical;
  EXPECT_DOUBLE_EQ(collective_time(in)->value, 28e-6 + 3.5e9 / 1e11 + 2 * 5e-6 + 1e9 / 1e10);
  // One node: no inter-node part, a reduce-scatter and an allgather inside it.
  in = {.op = Op::kAllreduce, .algorithm = Algorithm::kHostStriped, .bytes = 1e9, .ranks = 8, .link = intra,
        .ranks_per_node = 8, .inter_link = inter};
  EXPECT_DOUBLE_EQ(collective_time(in)->value, 14e-6 + 1.75e9 / 1e11);
  // Layouts that do not divide, and operations other than allreduce, have no estimate.
  in.ranks = 12;
  EXPECT_FALSE(collective_time(in));
  in.ranks = 16;
  in.op = Op::kBroadcast;
  EXPECT_FALSE(collective_time(in));
  EXPECT_FALSE(cost_coefficients(Op::kAllreduce, Algorithm::kHostStriped, 8));
  EXPECT_TRUE(is_two_level(Algorithm::kHostStriped));
  EXPECT_FALSE(is_two_level(Algorithm::kRing));
  EXPECT_EQ(parse_algorithm("host_striped"), Algorithm::kHostStriped);
  EXPECT_STREQ(algorithm_name(Algorithm::kHostStriped), "host_striped");
}

TEST(CostModelTest, PresetsAndNames) {
  EXPECT_DOUBLE_EQ(link_preset("nvlink").bandwidth, 450e9);  // seeds/004: 900 GB/s both directions
  EXPECT_DOUBLE_EQ(link_preset("ib-ndr").bandwidth, 50e9);   // 400 Gb/s
  EXPECT_DOUBLE_EQ(link_preset("ib-hdr").bandwidth, 25e9);   // 200 Gb/s
  EXPECT_DOUBLE_EQ(link_preset("eth-100g").bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(link_preset("eth-10g").bandwidth, 1.25e9);
  EXPECT_EQ(link_presets().size(), 10u);
  EXPECT_THROW(link_preset("carrier-pigeon", "--link"), InvalidArgument);
  EXPECT_EQ(parse_algorithm("recursive-doubling"), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(parse_op("reduce_scatter"), Op::kReduceScatter);
  EXPECT_THROW(parse_algorithm("bogus"), InvalidArgument);
  EXPECT_THROW(collective_time({.bytes = -1, .ranks = 2, .link = link(1e-6, 1e9)}), InvalidArgument);
}

}  // namespace
}  // namespace braid::plan
