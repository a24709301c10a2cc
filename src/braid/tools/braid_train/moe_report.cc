#include "braid/tools/braid_train/moe_report.h"

#include <fmt/format.h>

#include <numeric>

namespace braid::train {
namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

double MoeRunFigures::alltoall_share() const {
  double steps = sum(step_seconds);
  return steps > 0 ? sum(alltoall_seconds_per_step) / steps : 0;
}

std::string moe_summary(const MoeRunFigures& m) {
  std::int64_t dropped = std::accumulate(m.dropped_tokens_per_step.begin(), m.dropped_tokens_per_step.end(),
                                         std::int64_t{0});
  std::size_t steps = m.dropped_tokens_per_step.size();
  std::string out = fmt::format(
      "MoE: ep {}, {} experts, top-{}, capacity factor {}; tokens dropped {:.1f} per step of {} ({:.2f}%); "
      "all-to-all {:.2f} ms per step ({:.1f}% of step time, rank 0)\n",
      m.ep, m.experts, m.top_k, m.capacity_factor, steps > 0 ? static_cast<double>(dropped) / steps : 0.0,
      m.tokens_per_step,
      m.tokens_per_step > 0 && steps > 0 ? 100.0 * dropped / (static_cast<double>(m.tokens_per_step) * steps) : 0.0,
      steps > 0 ? 1e3 * sum(m.alltoall_seconds_per_step) / steps : 0.0, 100 * m.alltoall_share());
  for (std::size_t l = 0; l < m.load.size(); ++l) {
    out += fmt::format("  MoE layer {} expert load (choices routed): {}\n", l, fmt::join(m.load[l], " "));
  }
  return out;
}

nlohmann::json moe_json(const MoeRunFigures& m) {
  return {{"ep", m.ep},
          {"experts", m.experts},
          {"top_k", m.top_k},
          {"capacity_factor", m.capacity_factor},
          {"tokens_per_step", m.tokens_per_step},
          {"dropped_tokens_per_step", m.dropped_tokens_per_step},
          {"alltoall_seconds_per_step", m.alltoall_seconds_per_step},
          {"step_seconds", m.step_seconds},
          {"alltoall_share", m.alltoall_share()},
          {"expert_load", m.load}};
}

}  // namespace braid::train
