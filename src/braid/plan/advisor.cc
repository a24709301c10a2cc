#include "braid/plan/advisor.h"

#include <algorithm>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/mesh_layout.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

bool tp_valid(const ModelSpec& m, int tp) {
  return m.heads % tp == 0 && (m.kv_heads % tp == 0 || tp % m.kv_heads == 0);
}

// The layouts for one (dp, tp, pp), over ZeRO, schedule, recomputation and compression.
void expand(const AdviseInput& in, Layout base, std::vector<Candidate>& out) {
  for (int zero : in.zero_stages) {
    if (base.dp == 1 && zero > 0) continue;
    for (Schedule schedule : in.schedules) {
      if (base.pp == 1 && schedule != in.schedules.front()) continue;
      for (Recompute recompute : in.recompute) {
        for (const CompressionSpec& compression : in.compressions) {
          if (base.dp == 1 && compression.codec != "none") continue;
          Layout l = base;
          l.zero = zero, l.schedule = schedule, l.recompute = recompute, l.compression = compression;
          l.sequence_parallel = l.tp > 1;
          l.chunks = schedule == Schedule::kInterleaved1F1B ? in.interleave_chunks : 1;
          try {
            StepEstimate step = estimate_step(in.model, in.cluster, l, in.options);
            std::vector<Finding> findings = check_rules(in.model, in.cluster, step, in.options);
            out.push_back({std::move(step), std::move(findings)});
          } catch (const InvalidArgument&) {
            // Not a valid layout for this model (interleaving that does not divide, ...): skip.
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<Candidate> advise(const AdviseInput& in) {
  validate(in.model);
  require_range("global-batch", in.global_batch, 1, 1e9);
  require_range("micro-batch", in.micro_batch, 1, in.global_batch, "sequences per micro-batch");
  require_range("nodes", in.cluster.nodes, 1, 1e6);
  require_range("devices-per-node", in.cluster.devices_per_node, 1, 1024);
  const int world = in.cluster.world();
  std::vector<Candidate> out;
  // (tp, pp, dp) in mesh_factorizations' lexicographic order: tp ascending, then pp, the same
  // arithmetic the process mesh lays ranks out with (and the order the ranking's stable sort
  // breaks ties by).
  for (const std::vector<int>& sizes : mesh_factorizations(world, 3)) {
    const int tp = sizes[0], pp = sizes[1], dp = sizes[2];
    if (!tp_valid(in.model, tp) || pp > in.model.layers) continue;
    const long long per_replica = static_cast<long long>(dp) * in.micro_batch;
    if (in.global_batch % per_replica != 0) continue;
    Layout base{.dp = dp, .tp = tp, .pp = pp, .microbatches = static_cast<int>(in.global_batch / per_replica),
                .micro_batch = in.micro_batch};
    expand(in, base, out);
  }
  if (out.empty()) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("no valid layout: global-batch = {} with micro-batch = {} on {} devices leaves "
                                      "no dp x tp x pp with a whole number of micro-batches",
                                      in.global_batch, in.micro_batch, world));
  }
  // Fitting first; among those, the ones with memory to spare (the memory-headroom rule: the
  // last 10% of a device is rarely usable), then the fastest.
  const double roomy = 0.9 * in.cluster.memory;
  std::stable_sort(out.begin(), out.end(), [roomy](const Candidate& a, const Candidate& b) {
    if (a.step.fits != b.step.fits) return a.step.fits;
    const bool a_roomy = a.step.memory_bytes <= roomy, b_roomy = b.step.memory_bytes <= roomy;
    if (a_roomy != b_roomy) return a_roomy;
    return a.step.step_seconds < b.step.step_seconds;
  });
  return out;
}

}  // namespace braid::plan
