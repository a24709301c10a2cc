// 1F1B, PipeDream-Flush (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN Training",
// ICML 2021). Stage s runs
//   warm-up:   min(p-s-1, m) forwards (enough to keep the stages after it busy),
//   steady:    one forward, one backward, ... (each backward frees one micro-batch),
//   cool-down: the remaining backwards.
// Stage s therefore never holds more than p-s micro-batches' activations (p on stage 0),
// against m for GPipe, with the same bubble (p-1)/(m+p-1): the warm-up and cool-down ramps
// are as long as GPipe's.
//
// (The PipelineScheduler sketch in seeds/000 gets this wrong: it assigns forward and backward
// by global step index, so backward of micro-batch 0 on the last stage is scheduled p steps
// after its forward regardless of the data dependency, and some steps run "F+B" together.)
#include <algorithm>

#include "braid/parallel/pipeline_schedule.h"

namespace braid::parallel {

std::vector<std::vector<Action>> one_f_one_b_compute_order(const ScheduleSpec& spec) {
  const int p = spec.stages;
  const int m = spec.microbatches;
  std::vector<std::vector<Action>> order(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    std::vector<Action>& out = order[static_cast<std::size_t>(s)];
    const int warmup = std::min(p - s - 1, m);
    for (int mb = 0; mb < warmup; ++mb) out.push_back({ActionType::kForward, mb, 0, -1});
    for (int k = 0; k + warmup < m; ++k) {
      out.push_back({ActionType::kForward, warmup + k, 0, -1});
      out.push_back({ActionType::kBackward, k, 0, -1});
    }
    for (int mb = m - warmup; mb < m; ++mb) out.push_back({ActionType::kBackward, mb, 0, -1});
  }
  return order;
}

}  // namespace braid::parallel
