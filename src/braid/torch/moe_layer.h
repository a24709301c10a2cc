// braid::torch::MoeLayer: a Mixture-of-Experts MLP over an expert-parallel (EP) group (GShard,
// Switch, DeepSpeed-MoE): a top-k gate (moe_gate.h), `experts / ep` local expert MLPs
// (moe_experts.h), and the dispatch / combine all-to-alls as autograd functions
// (moe_autograd.h) over parallel::MoeDispatcher.
//
//   braid::torch::MoeLayer moe(ep_group, {.experts = 8, .top_k = 2, .hidden = 64, .ffn = 256,
//                                         .capacity_factor = 1.25});
//   torch::Tensor y = moe->forward(x);                   // x: [..., hidden], collective
//   torch::Tensor loss = task_loss(y) + moe->auxiliary_loss();
//   loss.backward();                                     // the reverse all-to-alls
//
// Every rank of the EP group routes its own tokens (capacity per rank's batch, moe_routing.h),
// so the layer's result does not depend on the EP size: EP = 4 computes, per token, what one
// process holding all 8 experts computes for the same tokens (tested: docs/moe.md).
// Gradients: the dense parameters (the gate) see this rank's tokens only, like any DDP
// parameter; the experts' see every token the EP group sent them. MoeDataParallel
// (moe_data_parallel.h) averages the two sets over their own groups.
//
// Construction is collective over ep_group (the dispatcher agrees the layer: experts not
// divisible by the group size, capacity factor <= 0, ranks disagreeing on the expert count
// ... are braid::Errors on every rank, docs/moe.md). Parameters are drawn from the global torch
// RNG: the gate's router, then every expert of the layer in global order (moe_experts.h).
// Thread-safety: one thread at a time (the EP group's contract); ep_group outlives the layer
// and its graphs.
#pragma once

#include <torch/torch.h>

#include "braid/torch/tensor_parallel_layers.h"  // BRAID_TORCH_MODULE

#include <cstdint>
#include <memory>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/parallel/moe_dispatcher.h"
#include "braid/torch/moe_autograd.h"
#include "braid/torch/moe_experts.h"
#include "braid/torch/moe_gate.h"
#include "braid/torch/moe_pipelined.h"

namespace braid::torch {

struct MoeLayerOptions {
  int experts = 0;              // over the EP group, divisible by its size
  int top_k = 1;                // 1 (Switch) or 2 (GShard)
  std::int64_t hidden = 0;      // token width
  std::int64_t ffn = 0;         // each expert's inner width
  double capacity_factor = 1.0; // > 0: capacity ceil(cf x T x k / E) per expert; unused if dropless
  bool dropless = false;        // no capacity: nothing dropped
  double aux_loss_coef = 0.01;  // load-balancing loss weight in auxiliary_loss() (Switch: 0.01)
  double z_loss_coef = 0;       // router z-loss weight (ST-MoE: 0.001); 0 leaves it out
  // Payload chunks of the exchange, the same on every rank: 1 the unpipelined autograd
  // functions (moe_autograd.h); > 1 Tutel's pipelined exchange in forward and backward
  // (moe_pipelined.h: the same bytes, each chunk's expert compute or backward overlapping the
  // next chunk's transfer).
  int chunks = 1;
};

// What the layer's calls in training mode routed since reset_stats(), this rank's tokens.
struct MoeLayerStats {
  std::int64_t calls = 0;
  std::int64_t tokens = 0;
  std::int64_t dropped_tokens = 0;    // tokens with every choice dropped
  std::int64_t dropped_choices = 0;
  std::vector<std::int64_t> routed_per_expert;  // load histogram before drops (E entries)
  MoeExchangeClock exchange;  // seconds in the layer's all-to-alls, forward and backward
};

class MoeLayerImpl : public ::torch::nn::Module {
 public:
  MoeLayerImpl(Communicator& ep_group, const MoeLayerOptions& options);
  // x: [..., hidden] -> [..., hidden]. Collective over the EP group.
  ::torch::Tensor forward(const ::torch::Tensor& x);

  // aux_loss_coef x load balancing + z_loss_coef x z-loss of the last forward (scalar).
  ::torch::Tensor auxiliary_loss() const { return auxiliary_loss_; }
  ::torch::Tensor load_balancing_loss() const { return last_aux_; }
  ::torch::Tensor z_loss() const { return last_z_; }

  const MoeLayerStats& stats() const { return stats_; }
  void reset_stats();
  const MoeLayerOptions& options() const { return options_; }
  int ep_size() const { return ep_size_; }
  // Whether a parameter of this module is one of its experts' (by name, as named_parameters gives it).
  static bool is_expert_parameter(const std::string& name);

  TopKGate gate{nullptr};
  MoeExperts experts{nullptr};

 private:
  void count(const parallel::MoeRouting& routing);

  MoeLayerOptions options_;
  int ep_size_;
  std::unique_ptr<parallel::MoeDispatcher> dispatcher_;
  MoeLayerStats stats_;
  ::torch::Tensor auxiliary_loss_, last_aux_, last_z_;
};
BRAID_TORCH_MODULE(MoeLayer);

}  // namespace braid::torch
