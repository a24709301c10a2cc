// MoE dispatch and combine over an expert-parallel (EP) group: tokens go to the ranks hosting
// their experts by all-to-all, come back the same way, and are summed weighted by the gate
// (GShard, Switch, DeepSpeed-MoE, Tutel). Torch-free: rows are flat buffers of `hidden`
// elements, the experts a callback.
//
//   MoeDispatcher moe(ep_group, {.experts = 8, .top_k = 2, .hidden = 1024, .capacity_factor = 1.25});
//   MoeDispatchPlan plan = moe.plan(expert_ids, tokens, /*chunks=*/2);   // collective: counts
//   moe.run(plan, tokens_in, gates, [&](const MoeExpertChunk& c) { experts(c); }, out);
//
// run() is Tutel's pipelined dispatch: the payload exchange is cut into `chunks` alltoallvs
// (moe_exchange_layout.h), all queued at once on the group's background queue, and the experts
// compute on chunk c while chunk c + 1 is on the wire; each chunk's results start back as soon
// as they are ready. chunks = 1 is the unpipelined exchange. The result does not depend on the
// chunk count, bit for bit: chunking moves rows, never changes the arithmetic on one.
//
// For autograd (the LibTorch layer wraps these): the forward is plan, dispatch, experts,
// combine (or run / run_choices); the backward reverses each exchange with the same plan
// (pipelined: run_backward, dispatch_choices and undispatch chunk by chunk around the experts'
// backward):
//   d combine / d expert output   = dispatch_choices(plan, gate x grad_out per choice)
//   d combine / d gate[t, j]      = <grad_out[t], return_rows(plan, expert output)[t k + j]>
//   d dispatch / d tokens         = undispatch(plan, grad expert input)
// so a backward moves what the forward moved, the other way (braid-plan's MoE formula counts
// both: plan/comm_volume.h).
//
// Errors, on every rank of the group, never a hang:
//  - the constructor agrees on the layer (one small allgather): ranks that disagree on experts,
//    top-k, hidden size, dtype, capacity factor or dropless raise Mismatch naming each field that
//    differs and every rank's value; then experts not divisible by the group size, capacity
//    factor <= 0, top-k outside [1, experts], hidden < 1, a dtype other than f32 / f64 raise
//    InvalidArgument.
//  - plan(): one rank's bad gating output (an expert id out of range, an expert named twice by one
//    token, a wrong number of ids) is exchanged with the counts, so every rank raises
//    InvalidArgument naming that rank, token and choice; ranks passing different chunk counts
//    raise Mismatch naming them.
//
// Thread-safety: as for Communicator: one thread at a time; the expert callback runs on the
// calling thread. Staging buffers are kept and reused (grown to the largest layer seen).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/comm/communicator.h"
#include "braid/parallel/moe_exchange_layout.h"
#include "braid/parallel/moe_routing.h"

namespace braid::parallel {

// The chunk count plan() takes by default. Measured (docs/performance.md, "MoE dispatch"):
// on the 2-vCPU VM of the tests the exchange is a shared-memory memcpy that needs the same
// cores as MLP experts, and chunking hid none of it, so 1; with experts whose compute leaves
// the cores free (an accelerator; braid-moe-bench --offload-ns-per-row) 4 chunks hid about half
// of it (1.25x per layer), 8 two thirds at 4 ranks. Pass a measured count where it pays.
inline constexpr int kDefaultMoeChunks = 1;

struct MoeLayerSpec {
  int experts = 0;               // over the whole EP group, divisible by its size
  int top_k = 1;                 // 1 or 2 usually; any in [1, experts]
  std::int64_t hidden = 0;       // elements per token row
  DType dtype = DType::kF32;     // of token rows and expert rows: f32 or f64
  double capacity_factor = 1.0;  // > 0; capacity = ceil(cf x T x k / E) per expert (moe_routing.h)
  bool dropless = false;         // no capacity, nothing dropped
};

// Everything one layer call needs, a value: made by MoeDispatcher::plan, read by every exchange
// of that call and of its backward.
struct MoeDispatchPlan {
  MoeRouting routing;
  MoeExchangeLayout layout;
  std::vector<std::int64_t> send_row_of_choice;  // tokens x top_k: row in the send buffer, -1 dropped
  std::vector<std::int64_t> choice_of_send_row;  // the inverse: choice t k + j of each send row
  std::vector<std::int64_t> token_of_send_row;   // choice / top_k
  std::vector<std::int64_t> received_per_local_expert;  // rows each local expert gets, from all ranks

  std::int64_t expert_rows() const { return layout.recv_rows(); }  // rows of the expert buffers
  int chunks() const { return layout.chunks(); }
};

// One chunk of rows for this rank's experts: input rows [offsets[le], offsets[le + 1]) belong to
// local expert le (global id first_expert + le); the callback writes the same rows of output.
struct MoeExpertChunk {
  int chunk = 0;
  int first_expert = 0;
  std::span<const std::int64_t> expert_offsets;  // local experts + 1, relative to input / output
  const void* input = nullptr;
  void* output = nullptr;
  std::int64_t rows = 0;
  std::int64_t hidden = 0;
  DType dtype = DType::kF32;
};
using MoeExpertFunction = std::function<void(const MoeExpertChunk&)>;

class MoeDispatcher {
 public:
  // Collective over ep_group (errors above). ep_group must outlive the dispatcher.
  MoeDispatcher(Communicator& ep_group, const MoeLayerSpec& spec);

  const MoeLayerSpec& spec() const { return spec_; }
  const MoeRoutingOptions& routing_options() const { return options_; }
  int first_local_expert() const { return group_.rank() * options_.local_experts(); }

  // Collective: routes this rank's tokens (expert_ids: tokens x top_k) and exchanges the
  // per-expert counts with an alltoall. chunks >= 1, the same on every rank.
  MoeDispatchPlan plan(std::span<const std::int32_t> expert_ids, std::int64_t tokens, int chunks = kDefaultMoeChunks);

  // Collective. tokens: plan.routing.tokens rows -> expert_input: plan.expert_rows() rows, in
  // the expert buffer's order (chunk-major, then local expert: moe_exchange_layout.h).
  void dispatch(const MoeDispatchPlan& plan, const void* tokens, void* expert_input);
  // Collective. Like dispatch, from one row per choice (tokens x top_k rows; dropped ones unread).
  void dispatch_choices(const MoeDispatchPlan& plan, const void* choice_rows, void* expert_input);
  // Collective, the reverse exchange: expert rows -> one row per choice at the token's rank,
  // zeros for dropped choices.
  void return_rows(const MoeDispatchPlan& plan, const void* expert_rows, void* choice_rows);
  // Collective: the reverse exchange, then out[t] = sum_j gates[t k + j] x expert output of
  // choice j (kept ones, j in order; tokens with none get zeros). gates: tokens x top_k.
  void combine(const MoeDispatchPlan& plan, const void* expert_output, const float* gates, void* out);
  // Collective: the reverse exchange, then grad_tokens[t] = sum over kept j of the rows
  // (dispatch's backward: a token's copies' gradients summed).
  void undispatch(const MoeDispatchPlan& plan, const void* grad_expert_input, void* grad_tokens);

  // Collective: dispatch, `experts` on each chunk as it arrives, combine; pipelined over
  // plan.chunks() (above). out: plan.routing.tokens rows.
  void run(const MoeDispatchPlan& plan, const void* tokens, const float* gates, const MoeExpertFunction& experts,
           void* out);
  // Collective: run() without the gate-weighted sum: one row per choice at the token's rank
  // (return_rows of the experts' output, zeros for dropped choices), for an autograd layer
  // that needs those rows for the gates' gradient. Pipelined over plan.chunks().
  void run_choices(const MoeDispatchPlan& plan, const void* tokens, const MoeExpertFunction& experts,
                   void* choice_rows);
  // Collective, the pipelined backward: dispatch_choices(grad_choice_rows) chunk by chunk,
  // `expert_backward` on each chunk as it arrives (input: d expert output rows, output: d expert
  // input rows), undispatch of each chunk's results as soon as they are ready. Equal, bit for
  // bit, to undispatch(expert_backward(dispatch_choices(rows))) for every chunk count.
  void run_backward(const MoeDispatchPlan& plan, const void* grad_choice_rows, const MoeExpertFunction& expert_backward,
                    void* grad_tokens);

 private:
  std::int64_t row_bytes() const { return spec_.hidden * static_cast<std::int64_t>(dtype_size(spec_.dtype)); }
  void forward(const MoeDispatchPlan& plan, const void* source, std::span<const std::int64_t> source_row, void* expert_input);
  void reverse(const MoeDispatchPlan& plan, const void* expert_rows);  // -> back_
  void pipeline(const MoeDispatchPlan& plan, const void* source, std::span<const std::int64_t> source_row,
                const MoeExpertFunction& experts);  // -> back_
  void check_plan(const MoeDispatchPlan& plan, const char* op) const;
  void check_peer_headers(std::span<const std::int64_t> recv, std::int64_t message, int chunks) const;
  static void index_send_rows(MoeDispatchPlan& plan, std::span<const std::int32_t> expert_ids);

  Communicator& group_;
  MoeLayerSpec spec_;
  MoeRoutingOptions options_;
  std::vector<std::byte> send_, recv_, back_, expert_in_, expert_out_, ret_;  // staging, reused
};

}  // namespace braid::parallel
