// Communication volume: bytes each rank sends, per collective and per training iteration, for
// the parallel strategies of seeds/004 (sections 1.2, 2.2-2.6 and "通信量估算").
//
// Everything is "bytes sent per rank" for the bandwidth-optimal (ring / halving-doubling)
// algorithms, which is what the wire has to carry and what nccl-tests' busbw normalises by.
// The seeds often quote the large-n limits (allreduce ~ 2S); the functions here keep the exact
// (n-1)/n factors, and their formulas say what the limit is.
#pragma once

#include "braid/plan/estimate.h"

namespace braid::plan {

// Ring reduce-scatter / allgather: (n-1)/n x S each; allreduce = both: 2 (n-1)/n x S.
// REQUIRES: bytes >= 0, n >= 1.
Estimate ring_reduce_scatter_bytes(double bytes, int n);
Estimate ring_allgather_bytes(double bytes, int n);
Estimate ring_allreduce_bytes(double bytes, int n);

// Data parallel gradient sync of `params` gradients of `grad_bytes` each over `dp` ranks:
// one allreduce, 2 (dp-1)/dp x params x grad_bytes (seed: 2 x 2Phi = 4Phi bytes for fp16).
Estimate dp_allreduce_bytes(double params, double grad_bytes, int dp);

// ZeRO stage 0..3 traffic per rank per iteration with `microbatches` gradient-accumulation steps
// (stage 0 is plain DP). Stage 1 reduce-scatters the accumulated gradients once and allgathers
// the updated parameters: the same 2 (n-1)/n Phi b as DP. Stage 2 keeps only a gradient shard,
// so it reduce-scatters after every micro-batch: (m+1) (n-1)/n Phi b. Stage 3 also gathers
// parameters for every forward and backward: m x 3 (n-1)/n Phi b. With m = 1 these are the
// ZeRO paper's 2Phi, 2Phi, 3Phi; seeds/004 1.3 lists stage 3 as allgather + reduce-scatter
// (2Phi), leaving out the second parameter gather of the backward pass.
Estimates zero_bytes(int stage, double params, double bytes_per_param, int dp, int microbatches);

// The activations one tensor-parallel collective moves: micro_batch x seq x hidden x bytes
// (seed 2.3: "2BSH" for fp16).
struct ActivationShape {
  double micro_batch = 1;
  double seq = 2048;
  double hidden = 4096;
  double bytes = 2;
  double message_bytes() const { return micro_batch * seq * hidden * bytes; }
};

// Megatron tensor parallelism over `tp` ranks, per transformer layer and micro-batch. Each of the
// two blocks (attention, MLP) is a column-parallel then a row-parallel linear: one allreduce in
// forward (after the row-parallel layer) and one in backward (the input gradient of the column-
// parallel layer), so 4 allreduces per layer in training, 6 with full recomputation (the
// recomputed forward repeats its 2). Sequence parallelism replaces each allreduce by an
// allgather + reduce-scatter of the same total volume. seeds/004 2.3 counts "about 4 forward,
// 4 backward = 8 x 2BSH": twice the Megatron-LM count (docs/planner.md).
Estimates tp_layer_bytes(const ActivationShape& shape, int tp, bool sequence_parallel, bool full_recompute);

// One column-parallel (forward: none, backward: allreduce of the input gradient) or
// row-parallel (forward: allreduce of the output, backward: none) linear layer.
Estimate tp_column_layer_bytes(const ActivationShape& shape, int tp);
Estimate tp_row_layer_bytes(const ActivationShape& shape, int tp);

// Pipeline parallelism: point-to-point at each stage boundary, one activation forward and one
// gradient backward per micro-batch, v times with an interleaved schedule of v chunks per stage.
// With sequence parallelism the boundary tensor is split over tp (divide by tp).
Estimates pp_bytes(const ActivationShape& shape, int microbatches, int chunks, int tp, bool sequence_parallel);

// MoE all-to-all for `tokens` tokens on this rank, top-k routing, `experts` experts spread over
// `ep` ranks: one way T k H b, both ways (dispatch + combine) 2 T k H b, T k / E tokens per
// expert on average. The seed's formula counts every routed copy; with experts spread evenly
// over ep ranks a share 1/ep stays on the rank, so the wire carries (ep-1)/ep of it.
//
// Per MoE layer in training (parallel/moe_dispatcher.h): the backward reverses both exchanges
// (the combine's gradient goes to the experts, the dispatch's comes back), so forward and
// backward each move 2 R H b, R the routed copies that are kept: T k dropless, at most
// min(T k, E C) with a capacity factor cf (C = ceil(cf T k / E), moe_routing.h; braid sends only
// the kept copies, where capacity-padded implementations send E C always).
//
// On the mesh edp x ep x pp x tp (base/moe_mesh_layout.h) these are per rank whatever tp and pp:
// T is the replica's (micro-)batch tokens at that layer, which every tp rank of the replica
// routes alike over its own EP group (the experts are not TP-split), so a replica's TP group
// moves tp times one rank's bytes (moe_layer_train_wire_bytes_per_tp_group); pp only decides
// which stage's EP group a layer exchanges over.
struct MoeShape {
  double tokens = 4096;
  double top_k = 2;
  double hidden = 4096;
  double bytes = 2;
  double experts = 8;
  int ep = 8;
  double capacity_factor = 0;  // 0: dropless
  int tp = 1;                  // tensor-parallel ranks of a replica, each exchanging its own copy
};
Estimates moe_alltoall_bytes(const MoeShape& shape);

// DDP bucket size rule of seeds/002: max(4 MB, gradient bytes / (16 x ranks)). The seed's upper
// bound "below one TCP packet (<8 MB)" is not a real limit (a TCP segment is at most 64 KiB and
// a stream has no size limit), so it is not applied.
Estimate bucket_size_rule(double gradient_bytes, int ranks);

}  // namespace braid::plan
