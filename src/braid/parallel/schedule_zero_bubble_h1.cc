// ZB-H1 (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024).
//
// The backward of a micro-batch is two computations: I, the gradient with respect to the
// stage's input (needed by the previous stage: on the critical path) and W, the gradient with
// respect to the weights (needed only by the optimizer step: deferrable). 1F1B runs them
// together; ZB-H1 keeps 1F1B's warm-up (min(p-s-1, m) forwards) and order of F and I, and lets
// stage s run W of micro-batch k only after I of micro-batch k+s. The later a stage, the more
// W passes it has in hand for the cool-down, where 1F1B stages sit waiting for gradients; each
// cool-down I is followed by one W, and the leftovers end the step.
//
// Memory: a micro-batch's activations are held from F until its W. Stage s holds at most
// (p-s) + s = p of them, 1F1B's peak (stage 0's), so ZB-H1 costs no extra activation memory.
// Bubble with F = I = W: (p-1)(F+I-W) = (p-1)*F against 1F1B's (p-1)(F+I+W), a third of it
// (the simulator shows it: 3m + p - 1 time units against 3m + 3(p-1)).
#include <algorithm>

#include "braid/parallel/pipeline_schedule.h"

namespace braid::parallel {

std::vector<std::vector<Action>> zero_bubble_h1_compute_order(const ScheduleSpec& spec) {
  const int p = spec.stages;
  const int m = spec.microbatches;
  std::vector<std::vector<Action>> order(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    std::vector<Action>& out = order[static_cast<std::size_t>(s)];
    int next_w = 0;
    auto weight = [&] { out.push_back({ActionType::kBackwardWeight, next_w++, 0, -1}); };
    const int warmup = std::min(p - s - 1, m);
    for (int mb = 0; mb < warmup; ++mb) out.push_back({ActionType::kForward, mb, 0, -1});
    for (int k = 0; k + warmup < m; ++k) {
      out.push_back({ActionType::kForward, warmup + k, 0, -1});
      out.push_back({ActionType::kBackwardInput, k, 0, -1});
      while (next_w <= k - s) weight();  // W lags I by s micro-batches
    }
    for (int k = std::max(m - warmup, 0); k < m; ++k) {
      out.push_back({ActionType::kBackwardInput, k, 0, -1});
      if (next_w <= k) weight();  // fill the cool-down gap
    }
    while (next_w < m) weight();
  }
  return order;
}

}  // namespace braid::parallel
