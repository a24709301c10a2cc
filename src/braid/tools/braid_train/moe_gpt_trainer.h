// The training loop of --model moe-gpt: data parallelism with expert parallelism inside it
// (--ep N) and, with --tp T, tensor parallelism inside that, on the mesh {edp, ep, pp = 1, tp}
// (base/moe_mesh_layout.h): world rank r is TP rank r % T of data-parallel replica r / T, EP rank
// (r / T) % N of its EP group. Each MoE layer's experts are spread over the EP group of the
// rank's tp index; dense parameters are averaged over the dp = world / T replicas (same tp
// index), expert parameters over the dp / N replicas of their shard (torch/moe_data_parallel.h);
// never over tp. With --tp the dense layers are split as the GPT's (tensor_parallel_gpt.cc) and
// the MoE layers stay whole: every tp rank routes the same (replicated) tokens, computes the
// same experts and gets the same expert and gate gradients (docs/moe.md says why).
//
// One step: each replica takes its batch / dp samples (DistributedSampler over the replicas),
// forward (the MoE layers' all-to-alls over the EP group), loss = cross-entropy (vocabulary-
// parallel with --tp) + the MoE layers' auxiliary losses, backward, MoeDataParallel::synchronize,
// the optimizer. The result does not depend on --ep or --tp (the tests compare them with --ep 1).
// Reported besides the usual figures (moe_report.h): tokens dropped per step, the expert load
// histogram of each MoE layer, rank 0's all-to-all time per step. The final digest and --export
// cover the whole model as --ep 1 --tp 1 holds it (moe_gpt_model.h: a flat float32 tensor).
#pragma once

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

RunSummary train_moe_gpt(Communicator& world, const TrainConfig& config);

}  // namespace braid::train
