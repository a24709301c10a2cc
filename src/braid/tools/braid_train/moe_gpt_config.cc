#include "braid/tools/braid_train/moe_gpt_config.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "braid/base/error.h"
#include "braid/parallel/pipeline_schedule.h"
#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

double MoeTrainConfig::capacity() const {
  if (dropless()) return 1;
  try {
    std::size_t used = 0;
    double cf = std::stod(capacity_factor, &used);
    if (used == capacity_factor.size()) return cf;
  } catch (const std::exception&) {
  }
  throw InvalidArgument({.op = "braid-train --capacity-factor"},
                        fmt::format("--capacity-factor {}: a number > 0 or `dropless`", capacity_factor));
}

void add_moe_flags(CLI::App& app, MoeTrainConfig& c) {
  app.add_option("--ep", c.ep,
                 "moe-gpt: expert-parallel ranks (EP groups of N consecutive ranks; experts averaged over world/N)")
      ->capture_default_str();
  app.add_option("--experts", c.experts, "moe-gpt: experts per MoE layer (divisible by --ep)")->capture_default_str();
  app.add_option("--top-k", c.top_k, "moe-gpt: experts per token, 1 (Switch) or 2 (GShard)")->capture_default_str();
  app.add_option("--capacity-factor", c.capacity_factor,
                 "moe-gpt: expert capacity ceil(CF x tokens x k / experts) per rank's batch, CF > 0; or `dropless`")
      ->capture_default_str();
  app.add_option("--aux-loss-coef", c.aux_loss_coef, "moe-gpt: load-balancing loss weight")->capture_default_str();
  app.add_option("--z-loss-coef", c.z_loss_coef, "moe-gpt: router z-loss weight (0: none)")->capture_default_str();
  app.add_option("--moe-chunks", c.chunks,
                 "moe-gpt: the all-to-all in N pipelined chunks, forward and backward; 1: unpipelined")
      ->capture_default_str();
}

namespace {

// What the MoE trainer does not combine with yet (docs/training.md: the next steps).
void refuse_unsupported(const TrainConfig& c) {
  auto refuse = [](const std::string& flag, const std::string& why) {
    throw InvalidArgument({.op = "braid-train --model moe-gpt"}, fmt::format("{} with --model moe-gpt: {}", flag, why));
  };
  if (c.dropout > 0) refuse("--dropout", "the MoE trainer's model has no dropout streams over its mesh (--ep, --tp, --pp)");
  if (c.pp > 1 && parallel::parse_schedule_kind(c.schedule).kind == parallel::ScheduleKind::kZeroBubbleH1) {
    refuse("--schedule " + c.schedule, "a zero-bubble schedule splits each backward into two passes, and a MoE layer's "
                                       "backward is an all-to-all that runs once per forward (1f1b, gpipe, interleaved:V)");
  }
  if (c.sequence_parallel) refuse("--sp", "a MoE layer routes the whole sequence, replicated over the TP group");
  if (c.zero > 0) refuse("--zero", "the expert parameters would need ZeRO shards over their own expert-DP group");
  if (c.precision != "fp32") refuse("--precision " + c.precision, "only fp32 (the dispatcher exchanges fp32 rows)");
  if (c.compress != "none") refuse("--compress " + c.compress, "gradient compression is not wired to the two groups");
  if (c.accumulate != 1) refuse("--accumulate", "one micro-batch per step");
  if (!c.checkpoint_dir.empty() || c.resumes()) refuse("--checkpoint-dir / --resume", "expert shards are not checkpointed yet");
  if (c.clip_grad > 0) refuse("--clip-grad", "the global norm over expert shards is not built yet");
}

}  // namespace

void validate_moe(const TrainConfig& c, int world) {
  const MoeTrainConfig& m = c.moe;
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train"}, detail); };
  bool defaults = m.ep == 1 && m.experts == 8 && m.top_k == 1 && m.capacity_factor == "1.25" && m.chunks == 1;
  if (c.model != "moe-gpt") {
    if (!defaults) bad(fmt::format("--ep, --experts, --top-k, --capacity-factor and --moe-chunks need --model moe-gpt (got {})", c.model));
    return;
  }
  refuse_unsupported(c);
  // The data-parallel ranks (world / (tp x pp)) are where EP groups are carved (base/moe_mesh_layout.h).
  int model_parallel = std::max(1, c.tp) * std::max(1, c.pp);
  if (world % model_parallel != 0) {
    bad(fmt::format("--tp {} x --pp {} with --model moe-gpt: their product must divide the world size {}", c.tp, c.pp,
                    world));
  }
  if (m.ep < 1 || (world / model_parallel) % m.ep != 0) {
    bad(fmt::format("--ep {}: must be at least 1 and divide the data-parallel size world / (tp x pp) = {} / ({} x {})",
                    m.ep, world, c.tp, c.pp));
  }
  // Without --pp one micro-batch per step: each replica takes batch / dp (with --pp,
  // validate_mesh also splits it into --microbatches).
  if (c.batch % (world / model_parallel) != 0) {
    bad(fmt::format("--batch {} is not divisible by the {} data-parallel replicas (world / (tp x pp))", c.batch,
                    world / model_parallel));
  }
  if (m.experts < 1 || m.experts % m.ep != 0) {
    bad(fmt::format("--experts {}: must be at least 1 and divisible by --ep {} (each EP rank hosts experts / ep)",
                    m.experts, m.ep));
  }
  if (m.top_k < 1 || m.top_k > 2 || m.top_k > m.experts) {
    bad(fmt::format("--top-k {}: 1 or 2, and at most --experts {}", m.top_k, m.experts));
  }
  if (m.chunks < 1 || m.chunks > 64) bad(fmt::format("--moe-chunks {}: must be in 1..64", m.chunks));
  double cf = m.capacity();
  if (!m.dropless() && !(std::isfinite(cf) && cf > 0)) {
    bad(fmt::format("--capacity-factor {}: must be a finite number > 0, or `dropless`", m.capacity_factor));
  }
  if (!(m.aux_loss_coef >= 0 && std::isfinite(m.aux_loss_coef)) || !(m.z_loss_coef >= 0 && std::isfinite(m.z_loss_coef))) {
    bad(fmt::format("--aux-loss-coef {} and --z-loss-coef {}: finite numbers >= 0", m.aux_loss_coef, m.z_loss_coef));
  }
}

}  // namespace braid::train
