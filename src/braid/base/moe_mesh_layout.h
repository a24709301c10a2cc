// The MoE process mesh: expert parallelism (ep) carved out of the data-parallel ranks, as
// Megatron-Core does, with the model-parallel axes inside it. Axes, outermost first (MeshLayout's
// row-major order, the innermost fastest):
//
//   {edp, ep, pp, tp}, dp = edp x ep          e.g. edp 2 x ep 2 x pp 2, tp 1 (8 ranks):
//
//                pp stage 0   pp stage 1
//   edp 0  ep 0  rank 0       rank 1          EP group of stage 0: {0, 2} (and {4, 6})
//          ep 1  rank 2       rank 3          EP group of stage 1: {1, 3} (and {5, 7})
//   edp 1  ep 0  rank 4       rank 5          expert-DP group (same ep, stage, tp): {0, 4}
//          ep 1  rank 6       rank 7          dense DP group (same stage, tp): {0, 2, 4, 6}
//
// With pp = tp = 1 this is braid-train moe-gpt's {dp, ep} rule: world rank r is EP rank r % ep
// of EP group r / ep, its expert-DP group the ranks with the same r % ep. With ep = 1 it is the
// mesh trainer's dp x pp x tp (data-parallel replica r / (pp tp)), so the dense layers of a
// replica sit where braid-train puts them without experts.
//
//   MeshLayout layout = moe_mesh_layout(8, {.ep = 2, .pp = 2});
//   layout.group(0, moe_ep_axes());        // {0, 2}: the MoE layers' all-to-all
//   layout.group(0, moe_expert_dp_axes()); // {0, 4}: expert gradients averaged here
//   layout.group(0, moe_dense_dp_axes());  // {0, 2, 4, 6}: dense gradients averaged here
//
// The groups never include the tp axis: the tp ranks of a TP group hold the same activations
// at a MoE layer's input and compute the same (untensor-split) experts, so their expert and
// gate gradients come out identical and are averaged over expert-DP / dense DP only
// (docs/moe.md, "The ep axis on the dp x pp x tp mesh").
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "braid/base/mesh_layout.h"

namespace braid {

struct MoeMeshShape {
  int ep = 1;  // expert-parallel ranks per EP group
  int pp = 1;  // pipeline stages
  int tp = 1;  // tensor-parallel ranks
};

// The {edp, ep, pp, tp} layout of `world` ranks. InvalidArgument naming what does not fit when
// a size is < 1, tp x pp does not divide the world, or ep does not divide world / (tp x pp).
MeshLayout moe_mesh_layout(int world, MoeMeshShape shape);

// The axis sets of the three MoE groups on that layout.
const std::vector<std::string>& moe_ep_axes();         // {"ep"}
const std::vector<std::string>& moe_expert_dp_axes();  // {"edp"}
const std::vector<std::string>& moe_dense_dp_axes();   // {"edp", "ep"}

}  // namespace braid
