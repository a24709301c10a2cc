#include "braid/plan/rules.h"

#include <fmt/format.h>

#include "braid/plan/comm_volume.h"
#include "braid/plan/units.h"

namespace braid::plan {

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "?";
}

namespace {

void memory_rules(const ClusterSpec& c, const StepEstimate& s, std::vector<Finding>& out) {
  if (!s.fits) {
    out.push_back({"fits-in-memory", Severity::kError,
                   fmt::format("needs {} per device, the device has {}: raise ZeRO stage, tp or pp, or recompute "
                               "activations",
                               format_bytes(s.memory_bytes), format_bytes(c.memory))});
  } else if (s.memory_bytes > 0.9 * c.memory) {
    out.push_back({"memory-headroom", Severity::kWarning,
                   fmt::format("uses {:.0f}% of device memory; allocator fragmentation and framework workspace "
                               "usually need the last 10%",
                               100 * s.memory_bytes / c.memory)});
  }
}

void parallelism_rules(const ModelSpec& m, const ClusterSpec& c, const StepEstimate& s, std::vector<Finding>& out) {
  const Layout& l = s.layout;
  if (l.tp > c.devices_per_node) {
    out.push_back({"tp-inside-node", Severity::kWarning,
                   fmt::format("tp = {} spans nodes ({} devices each): TP allreduces sit on the critical path of every "
                               "layer and would run at {} instead of {}; keep tp <= devices per node (seeds/000, "
                               "seeds/004 2.3)",
                               l.tp, c.devices_per_node, format_rate(c.inter.bandwidth), format_rate(c.intra.bandwidth))});
  }
  if (l.pp > 1 && 2 * l.pp > l.microbatches) {
    const double bubble = find_estimate(s.items, "bubble_fraction").value;
    out.push_back({"pp-microbatches", Severity::kWarning,
                   fmt::format("pp = {} with m = {} micro-batches: bubble {:.0f}%; keep p <= m/2 for a bubble under 33% "
                               "(seeds/000)",
                               l.pp, l.microbatches, 100 * bubble)});
  }
  if (l.pp > 1 && m.layers % (l.pp * l.chunks) != 0) {
    out.push_back({"pp-balance", Severity::kWarning,
                   fmt::format("layers = {} do not split evenly over pp x chunks = {}: the slowest stage sets the pace",
                               m.layers, l.pp * l.chunks)});
  }
  if (l.tp > 1 && !l.sequence_parallel) {
    out.push_back({"sequence-parallel", Severity::kInfo,
                   "sequence parallelism splits the activations outside attention by tp for the same TP volume "
                   "(allgather + reduce-scatter instead of allreduce)"});
  }
  if (l.zero > 0 && l.dp == 1) {
    out.push_back({"zero-needs-dp", Severity::kInfo, "ZeRO shards over the DP group; with dp = 1 it changes nothing"});
  }
}

void communication_rules(const ModelSpec& m, const StepEstimate& s, const StepOptions& o, std::vector<Finding>& out) {
  const Layout& l = s.layout;
  const double exposed = find_estimate(s.items, "dp_exposed_seconds").value;
  if (exposed > 0.2 * s.step_seconds) {
    out.push_back({"dp-exposed", Severity::kWarning,
                   fmt::format("exposed DP communication is {:.0f}% of the step (seeds/000 quotes 20% for 7B on 8 "
                               "GPUs as the point where scaling suffers): overlap it, compress it, or trade dp for pp",
                               100 * exposed / s.step_seconds)});
  }
  if (l.compression.codec != "none") {
    out.push_back({"compression-schedule", Severity::kInfo,
                   "compress early in training, when gradients are large and sparsification costs little, and turn "
                   "compression off (or keep more) late, when small gradients carry the signal (seeds/000 section 4); "
                   "keep error feedback on"});
  }
  if (l.compression.codec == "topk" && l.dp > 1 && 8 * l.compression.parameter * l.dp > 2 * o.grad_bytes) {
    out.push_back({"topk-scaling", Severity::kWarning,
                   fmt::format("top-k sends (dp-1) x 8 R Phi: at dp = {} and R = {} that is more than a dense "
                               "allreduce; use random-k or int8, or a smaller R",
                               l.dp, num(l.compression.parameter))});
  }
  if (l.dp > 1) {
    const double grads = m.params() / (static_cast<double>(l.tp) * l.pp) * o.grad_bytes;
    const Estimate bucket = bucket_size_rule(grads, l.dp * l.tp * l.pp);
    out.push_back({"bucket-size", Severity::kInfo,
                   fmt::format("gradient buckets of about {} (seeds/002: max(4 MiB, gradients / (16 x ranks)))",
                               format_bytes(bucket.value))});
  }
}

}  // namespace

std::vector<Finding> check_rules(const ModelSpec& model, const ClusterSpec& cluster, const StepEstimate& step,
                                 const StepOptions& options) {
  std::vector<Finding> out;
  memory_rules(cluster, step, out);
  parallelism_rules(model, cluster, step, out);
  communication_rules(model, step, options, out);
  return out;
}

}  // namespace braid::plan
