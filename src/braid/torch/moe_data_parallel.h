// Data parallelism for a model with MoE layers (expert parallelism, EP = ep): the two
// parameter sets are averaged over different groups (DeepSpeed-MoE, Megatron-Core):
//
//   dense parameters (everything that is not an expert): over the whole data-parallel world,
//     as plain DDP (every rank holds a replica);
//   expert parameters: over the ranks holding the same expert shard only, the expert-DP group
//     (world / ep ranks: the same EP rank in every EP group).
//
//   MoeGroups groups = split_moe_groups(world, 2);          // EP groups of 2, expert-DP of world/2
//   auto model = std::make_shared<Net>(groups.ep, ...);      // MoeLayers over groups.ep
//   braid::torch::MoeDataParallel ddp(world, groups.expert_dp, model);
//   ... ddp.zero_grad(); loss.backward(); ddp.synchronize(); opt.step();
//
// How DDP handles the two sets: two DistributedDataParallel wrappers (each its own GradSync,
// buckets and backward hooks) over two holder modules that register the same parameter tensors
// (the model's, by name; MoeLayerImpl::is_expert_parameter tells them apart), one on `world`,
// one on `expert_dp`. Both broadcast from their rank 0 at construction (the expert one from the
// first replica of each shard) and check their replicas agree on names and shapes.
//
// The scale: an expert's gradient on its rank is already the sum over the EP group's ranks of
// their losses' gradients (dispatch brought their tokens, combine's backward their gradients),
// so averaging it over expert-DP (world / ep) would leave it ep times DDP's average over world;
// synchronize() multiplies the expert gradients by 1 / ep after the average, giving both sets
// d(mean over the world's ranks of their losses) -- what DDP over one process holding every
// expert computes (tested against it, docs/moe.md).
//
// EP groups are consecutive ranks: rank r is EP rank r % ep of EP group r / ep.
// ZeRO and compression are not offered here (DdpOptions defaults apart from bucket_cap/overlap).
// Thread-safety: as DistributedDataParallel.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>

#include "braid/comm/communicator.h"
#include "braid/torch/distributed_data_parallel.h"

namespace braid::torch {

struct MoeGroups {
  Communicator ep;         // this rank's EP group (the MoE layers' all-to-all)
  Communicator expert_dp;  // the replicas of this rank's expert shard
};

// Collective over world (two splits). InvalidArgument naming the rank when ep < 1 or ep does
// not divide the world size.
MoeGroups split_moe_groups(Communicator& world, int ep);

class MoeDataParallel {
 public:
  // Collective over world, then over expert_dp. A model without any expert parameter has an
  // empty expert set (and no second wrapper).
  MoeDataParallel(Communicator& world, Communicator& expert_dp, const std::shared_ptr<::torch::nn::Module>& model,
                  DdpOptions options = {});

  void zero_grad();
  // Waits for both sets, then scales the expert gradients by expert_dp / world (= 1 / ep).
  GradSyncStats synchronize();

  DistributedDataParallel& dense() { return *dense_; }
  DistributedDataParallel* experts() { return experts_ ? experts_.get() : nullptr; }

 private:
  std::unique_ptr<DistributedDataParallel> dense_, experts_;
  std::vector<::torch::Tensor> expert_params_;
  double expert_scale_;
};

}  // namespace braid::torch
