// Interleaved 1F1B (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM", SC 2021), the order Megatron-LM's
// forward_backward_pipelining_with_interleaving runs.
//
// Each stage holds v chunks (virtual stages s, s+p, s+2p, ...), each 1/v of its layers. A
// stage walks m*v "virtual micro-batches": forward number k is micro-batch
// (k / (p*v)) * p + k % p of chunk (k % (p*v)) / p (groups of p micro-batches per chunk,
// chunks ascending); backward number k is the same with chunks descending. Warm-up is
// (p-s-1)*2 + (v-1)*p forwards (all of them when m == p, as Megatron does), then 1F1B, then
// the remaining backwards. The ramps now consist of chunk-sized actions, so the bubble shrinks
// by v: (p-1)/(v*m + p-1) of the step instead of (p-1)/(m+p-1), at v times the P2P
// transfers. The grouping by p is why m must be a multiple of p.
#include <algorithm>

#include "braid/parallel/pipeline_schedule.h"

namespace braid::parallel {
namespace {

Action virtual_microbatch(const ScheduleSpec& spec, int k, bool forward) {
  const int p = spec.stages;
  const int group = p * spec.chunks;
  const int in_group = k % group;
  const int chunk = forward ? in_group / p : spec.chunks - 1 - in_group / p;
  const int mb = (k / group) * p + in_group % p;
  return {forward ? ActionType::kForward : ActionType::kBackward, mb, chunk, -1};
}

}  // namespace

std::vector<std::vector<Action>> interleaved_compute_order(const ScheduleSpec& spec) {
  const int p = spec.stages;
  const int total = spec.microbatches * spec.chunks;
  std::vector<std::vector<Action>> order(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    std::vector<Action>& out = order[static_cast<std::size_t>(s)];
    const int warmup = spec.microbatches == p ? total : std::min((p - s - 1) * 2 + (spec.chunks - 1) * p, total);
    for (int k = 0; k < warmup; ++k) out.push_back(virtual_microbatch(spec, k, true));
    for (int k = 0; k + warmup < total; ++k) {
      out.push_back(virtual_microbatch(spec, warmup + k, true));
      out.push_back(virtual_microbatch(spec, k, false));
    }
    for (int k = std::max(total - warmup, 0); k < total; ++k) out.push_back(virtual_microbatch(spec, k, false));
  }
  return order;
}

}  // namespace braid::parallel
