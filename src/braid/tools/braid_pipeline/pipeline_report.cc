#include "pipeline_report.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/parallel/timeline_render.h"

namespace braid::tools {

using parallel::Action;
using parallel::ActionType;

std::string format_action_lists(const parallel::Schedule& schedule) {
  std::string out;
  for (std::size_t s = 0; s < schedule.stages.size(); ++s) {
    out += fmt::format("stage {}:", s);
    for (const Action& a : schedule.stages[s]) {
      std::string chunk = schedule.spec.chunks > 1 ? fmt::format(".{}", a.chunk) : "";
      if (parallel::is_compute(a.type)) {
        out += fmt::format(" {}{}{}", parallel::action_type_name(a.type), a.microbatch, chunk);
      } else {
        const char* arrow = parallel::is_send(a.type) ? ">" : "<";
        out += fmt::format(" {}{}{}{}{}", parallel::action_type_name(a.type), a.microbatch, chunk, arrow, a.peer);
      }
    }
    out += "\n";
  }
  return out;
}

std::string format_schedule_report(const parallel::SimulationResult& r) {
  std::string out = parallel::render_ascii_timeline(r);
  out += fmt::format("\n{} p={} m={} v={}  costs F={} I={} W={} P2P={}\n", parallel::schedule_name(r.spec),
                     r.spec.stages, r.spec.microbatches, r.spec.chunks, r.costs.forward, r.costs.backward_input,
                     r.costs.backward_weight, r.costs.p2p);
  out += fmt::format("makespan {:.4g}  bubble {:.2f}% simulated, {:.2f}% theoretical\n", r.makespan,
                     100 * r.bubble_rate(), 100 * parallel::theoretical_bubble_rate(r.spec, r.costs));
  for (std::size_t s = 0; s < r.stages.size(); ++s) {
    out += fmt::format("stage {:>2}: busy {:.4g}  idle {:.4g}  peak in-flight activations {}\n", s, r.stages[s].busy,
                       r.stages[s].idle, r.stages[s].peak_in_flight);
  }
  return out;
}

std::vector<parallel::ScheduleSpec> comparison_specs(int stages, int microbatches, int chunks) {
  std::vector<parallel::ScheduleSpec> specs{{parallel::ScheduleKind::kGPipe, stages, microbatches, 1},
                                            {parallel::ScheduleKind::k1F1B, stages, microbatches, 1}};
  if (chunks > 1) specs.push_back({parallel::ScheduleKind::kInterleaved1F1B, stages, microbatches, chunks});
  specs.push_back({parallel::ScheduleKind::kZeroBubbleH1, stages, microbatches, 1});
  return specs;
}

std::string format_simulation_table(int stages, int microbatches, int chunks, const parallel::ActionCosts& costs) {
  parallel::check_action_costs(costs);  // a bad cost is the caller's error, not one row's
  std::string out = fmt::format("p={} m={} costs per stage: F={} I={} W={} (B=I+W) P2P={}\n", stages, microbatches,
                                costs.forward, costs.backward_input, costs.backward_weight, costs.p2p);
  out += fmt::format("{:<15} {:>9} {:>10} {:>10} {:>12} {:>9}\n", "schedule", "theory", "simulated", "makespan",
                     "idle/stage", "peak act");
  for (const parallel::ScheduleSpec& spec : comparison_specs(stages, microbatches, chunks)) {
    try {
      parallel::SimulationResult r = parallel::simulate(parallel::make_schedule(spec), costs);
      out += fmt::format("{:<15} {:>8.2f}% {:>9.2f}% {:>10.4g} {:>12.4g} {:>9}\n", parallel::schedule_name(spec),
                         100 * parallel::theoretical_bubble_rate(spec, costs), 100 * r.bubble_rate(), r.makespan,
                         r.total_idle() / stages, r.peak_in_flight());
    } catch (const InvalidArgument& e) {
      out += fmt::format("{:<15} n/a: {}\n", parallel::schedule_name(spec), e.detail());
    }
  }
  out += "peak act: most (micro-batch, chunk) activations a stage holds at once (chunk = 1/v of a stage)\n";
  return out;
}

}  // namespace braid::tools
