// GPipe (Huang et al., NeurIPS 2019): every stage runs all m forwards, then all m backwards.
// The simplest correct schedule: bubble (p-1)/(m+p-1), but every stage holds all m
// micro-batches' activations at the turn, which is what 1F1B fixes.
#include "braid/parallel/pipeline_schedule.h"

namespace braid::parallel {

std::vector<std::vector<Action>> gpipe_compute_order(const ScheduleSpec& spec) {
  std::vector<std::vector<Action>> order(static_cast<std::size_t>(spec.stages));
  for (auto& stage : order) {
    for (int mb = 0; mb < spec.microbatches; ++mb) stage.push_back({ActionType::kForward, mb, 0, -1});
    for (int mb = 0; mb < spec.microbatches; ++mb) stage.push_back({ActionType::kBackward, mb, 0, -1});
  }
  return order;
}

}  // namespace braid::parallel
