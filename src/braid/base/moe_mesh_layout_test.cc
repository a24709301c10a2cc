// The MoE mesh {edp, ep, pp, tp} against the example docs/moe.md draws (8 ranks: edp 2 x ep 2 x
// pp 2), against the {dp, ep} rule moe-gpt used before (r % ep, r / ep) and the mesh trainer's
// dp x pp x tp layout, with a tp axis, and the refusals.
#include "braid/base/moe_mesh_layout.h"

#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

using Ranks = std::vector<int>;

TEST(MoeMeshLayoutTest, TheDrawnEightRankExample) {
  MeshLayout layout = moe_mesh_layout(8, {.ep = 2, .pp = 2});
  EXPECT_EQ(layout.describe(), "edp=2 x ep=2 x pp=2 x tp=1");
  // EP groups: stage 0 {0, 2}, {4, 6}; stage 1 {1, 3}, {5, 7}.
  const std::vector<Ranks> ep = {{0, 2}, {1, 3}, {0, 2}, {1, 3}, {4, 6}, {5, 7}, {4, 6}, {5, 7}};
  const std::vector<Ranks> expert_dp = {{0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
  const std::vector<Ranks> dense_dp = {{0, 2, 4, 6}, {1, 3, 5, 7}, {0, 2, 4, 6}, {1, 3, 5, 7},
                                       {0, 2, 4, 6}, {1, 3, 5, 7}, {0, 2, 4, 6}, {1, 3, 5, 7}};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(layout.group(r, moe_ep_axes()), ep[r]) << r;
    EXPECT_EQ(layout.group(r, moe_expert_dp_axes()), expert_dp[r]) << r;
    EXPECT_EQ(layout.group(r, moe_dense_dp_axes()), dense_dp[r]) << r;
    EXPECT_EQ(layout.coordinate(r, "pp"), r % 2) << r;  // the stage, as braid-train's pipeline has it
    EXPECT_EQ(layout.position_in_group(r, moe_ep_axes()), layout.coordinate(r, "ep")) << r;
  }
}

// pp = tp = 1 is the {dp, ep} rule: EP rank r % ep of EP group r / ep, expert-DP the same r % ep.
TEST(MoeMeshLayoutTest, WithoutModelParallelismItIsTheDataParallelEpRule) {
  for (int world : {1, 2, 4, 6, 8, 12}) {
    for (int ep = 1; ep <= world; ++ep) {
      if (world % ep != 0) continue;
      MeshLayout layout = moe_mesh_layout(world, {.ep = ep});
      for (int r = 0; r < world; ++r) {
        Ranks group, replicas, all;
        for (int q = 0; q < world; ++q) {
          if (q / ep == r / ep) group.push_back(q);
          if (q % ep == r % ep) replicas.push_back(q);
          all.push_back(q);
        }
        EXPECT_EQ(layout.group(r, moe_ep_axes()), group) << world << " " << ep << " " << r;
        EXPECT_EQ(layout.position_in_group(r, moe_ep_axes()), r % ep);
        EXPECT_EQ(layout.group(r, moe_expert_dp_axes()), replicas) << world << " " << ep << " " << r;
        EXPECT_EQ(layout.group(r, moe_dense_dp_axes()), all);
      }
    }
  }
}

// tp innermost: a TP group is tp consecutive ranks (the mesh trainer's layout: replica
// r / (pp tp), stage (r / tp) % pp, TP rank r % tp), and no MoE group crosses tp.
TEST(MoeMeshLayoutTest, TensorParallelRanksKeepTheirOwnEpGroups) {
  MeshLayout layout = moe_mesh_layout(8, {.ep = 2, .tp = 2});  // edp 2 x ep 2 x tp 2
  EXPECT_EQ(layout.group(0, {"tp"}), (Ranks{0, 1}));
  EXPECT_EQ(layout.group(0, moe_ep_axes()), (Ranks{0, 2}));
  EXPECT_EQ(layout.group(1, moe_ep_axes()), (Ranks{1, 3}));
  EXPECT_EQ(layout.group(1, moe_expert_dp_axes()), (Ranks{1, 5}));
  EXPECT_EQ(layout.group(1, moe_dense_dp_axes()), (Ranks{1, 3, 5, 7}));
  MeshLayout mixed = moe_mesh_layout(16, {.ep = 2, .pp = 2, .tp = 2});
  MeshLayout trainer({{"dp", 4}, {"pp", 2}, {"tp", 2}}, 16);
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(mixed.group(r, {"tp"}), trainer.group(r, {"tp"})) << r;
    EXPECT_EQ(mixed.group(r, {"pp"}), trainer.group(r, {"pp"})) << r;
    EXPECT_EQ(mixed.group(r, moe_dense_dp_axes()), trainer.group(r, {"dp"})) << r;
    for (const auto& axes : {moe_ep_axes(), moe_expert_dp_axes(), moe_dense_dp_axes()}) {
      for (int q : mixed.group(r, axes)) {
        EXPECT_EQ(mixed.coordinate(q, "tp"), mixed.coordinate(r, "tp"));
        EXPECT_EQ(mixed.coordinate(q, "pp"), mixed.coordinate(r, "pp"));
      }
    }
  }
}

TEST(MoeMeshLayoutTest, WhatDoesNotFitIsNamed) {
  auto message = [](int world, MoeMeshShape shape) -> std::string {
    try {
      moe_mesh_layout(world, shape);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message(8, {.ep = 3}).find("ep 3 x pp 1 x tp 1 on 8 ranks: ep must divide the data-parallel size world / "
                                       "(tp x pp) = 8"),
            std::string::npos)
      << message(8, {.ep = 3});
  EXPECT_NE(message(8, {.ep = 3, .tp = 2}).find("ep must divide the data-parallel size world / (tp x pp) = 4"),
            std::string::npos);
  EXPECT_NE(message(8, {.ep = 4, .pp = 2, .tp = 2}).find("= 2"), std::string::npos);
  EXPECT_NE(message(6, {.ep = 1, .tp = 4}).find("tp x pp = 4 does not divide the world"), std::string::npos);
  EXPECT_NE(message(4, {.ep = 0}).find("every size must be at least 1"), std::string::npos);
  EXPECT_EQ(message(8, {.ep = 2, .pp = 2, .tp = 2}), "(accepted)");
}

}  // namespace
}  // namespace braid
