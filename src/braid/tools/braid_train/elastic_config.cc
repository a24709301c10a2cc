#include "braid/tools/braid_train/elastic_config.h"

#include <fmt/format.h>

namespace braid::train {

std::string elastic_refusal(const TrainConfig& c) {
  if (c.uses_mesh()) {
    return "--elastic covers the data-parallel trainer only: with --tp, --pp or --dropout (the mesh) each rank holds "
           "a stage or a slice of the model that no survivor has a copy of (elastic meshes are the next step)";
  }
  if (c.model == "moe-gpt") {
    return "--elastic with --model moe-gpt: its experts are sharded over the expert-parallel group, so a lost "
           "rank's experts have no copy (elastic MoE is the next step)";
  }
  if (c.zero != 0) {
    return fmt::format("--elastic with --zero {}: ZeRO shards the optimizer state over the ranks, so a lost rank's "
                       "shard has no copy (buddy copies of the shards are the next step); use --zero 0",
                       c.zero);
  }
  if (c.compress != "none") {
    return fmt::format("--elastic with --compress {}: the codecs' error-feedback residuals are per rank and leave "
                       "with a lost one; use --compress none",
                       c.compress);
  }
  if (c.precision != "fp32") {
    return fmt::format("--elastic with --precision {}: the loss scale and master weights are not in the in-memory "
                       "snapshot yet; use --precision fp32",
                       c.precision);
  }
  if (c.accumulate != 1) {
    return "--elastic with --accumulate: after a loss the global batch splits unevenly over the survivors, and "
           "uneven micro-batches are not implemented";
  }
  if (!c.checkpoint_dir.empty() || c.resumes()) {
    return "--elastic with --checkpoint-dir / --resume: elastic recovery rolls back to the survivors' in-memory "
           "copies; checkpoints under --elastic are not implemented";
  }
  if (!c.trace_dir.empty()) return "--elastic with --trace: a trace's rank numbers change with the membership";
  return "";
}

}  // namespace braid::train
