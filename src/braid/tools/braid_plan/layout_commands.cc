// step and advise: the step-time model for one layout, and the ranked list of all layouts.
#include <memory>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/pipeline_schedule_kind.h"
#include "braid/plan/advisor.h"
#include "braid/plan/units.h"
#include "commands.h"
#include "plan_flags.h"

namespace braid::plan::cli {

namespace {

struct StepFlags {
  ModelFlags model;
  ClusterFlags cluster;
  LayoutFlags layout;
  PrecisionFlags precision;
};

Report step_report(const StepFlags& f) {
  const ModelSpec m = model_from(f.model);
  const ClusterSpec c = cluster_from(f.cluster);
  Layout l = layout_from(f.layout);
  const StepOptions o = options_from(f.precision);
  // dp follows from the cluster unless given: the devices tp x pp leave over.
  if (f.layout.dp == 1 && c.world() % (l.tp * l.pp) == 0) l.dp = c.world() / (l.tp * l.pp);
  const StepEstimate s = estimate_step(m, c, l, o);
  Report r{.command = "step"};
  r.inputs = {{"model", describe(m)}, {"cluster", describe(c)}, {"layout", describe(l)}};
  r.sections.push_back({fmt::format("{} on {} x {} devices: dp {} x tp {} x pp {}, ZeRO-{}, m = {}, {}, {} "
                                    "recomputation, compression {}",
                                    m.name, c.nodes, c.devices_per_node, l.dp, l.tp, l.pp, l.zero, l.microbatches,
                                    pipeline_schedule_kind_name(l.schedule), recompute_name(l.recompute),
                                    compression_name(l.compression)),
                        s.items});
  r.findings = check_rules(m, c, s, o);
  r.notes.push_back(s.fits ? fmt::format("fits: {} of {} per device", format_bytes(s.memory_bytes), format_bytes(c.memory))
                           : fmt::format("does NOT fit: {} needed, {} per device", format_bytes(s.memory_bytes),
                                         format_bytes(c.memory)));
  return r;
}

struct AdviseFlags {
  ModelFlags model;
  ClusterFlags cluster;
  PrecisionFlags precision;
  int global_batch = 512;
  int micro_batch = 1;
  std::string zero = "0,1,2,3";
  std::string schedules = "1f1b,interleaved";
  std::string recompute = "none,selective,full";
  std::string compression = "none";
  int chunks = 2;
  int top = 15;
  bool show_unfit = false;
};

AdviseInput advise_input(const AdviseFlags& f) {
  AdviseInput in{.model = model_from(f.model), .cluster = cluster_from(f.cluster), .global_batch = f.global_batch,
                 .micro_batch = f.micro_batch};
  in.zero_stages.clear(), in.schedules.clear(), in.recompute.clear(), in.compressions.clear();
  for (const std::string& z : split_list(f.zero)) {
    if (z.size() != 1 || z[0] < '0' || z[0] > '3') {
      throw InvalidArgument({.op = "braid-plan"}, fmt::format("--zero: '{}' is not a ZeRO stage (0, 1, 2, 3)", z));
    }
    in.zero_stages.push_back(z[0] - '0');
  }
  require_range("--chunks", f.chunks, 1, 64);
  in.interleave_chunks = f.chunks;
  for (const std::string& s : split_list(f.schedules)) {
    const PipelineScheduleName schedule = parse_pipeline_schedule(s, "--schedules");
    in.schedules.push_back(schedule.kind);
    if (schedule.chunks) in.interleave_chunks = *schedule.chunks;  // interleaved:V says v itself
  }
  for (const std::string& s : split_list(f.recompute)) in.recompute.push_back(parse_recompute(s, "--recompute"));
  for (const std::string& s : split_list(f.compression)) in.compressions.push_back(parse_compression(s, "--compression"));
  if (in.zero_stages.empty() || in.schedules.empty() || in.recompute.empty() || in.compressions.empty()) {
    throw InvalidArgument({.op = "braid-plan"}, "--zero, --schedules, --recompute and --compression need one value each");
  }
  require_range("--top", f.top, 1, 1e6);
  in.options = options_from(f.precision);
  return in;
}

std::vector<std::string> row_of(std::size_t rank, const Candidate& c) {
  const Layout& l = c.step.layout;
  int warnings = 0;
  for (const Finding& f : c.findings) warnings += f.severity != Severity::kInfo;
  return {num(rank),
          num(l.dp),
          num(l.tp),
          num(l.pp),
          num(l.zero),
          num(l.microbatches),
          l.pp > 1 ? std::string(pipeline_schedule_kind_name(l.schedule)) : "-",
          recompute_name(l.recompute),
          compression_name(l.compression),
          format_seconds(c.step.step_seconds),
          fmt::format("{:.0f}", c.step.tokens_per_second),
          fmt::format("{:.1f}%", 100 * c.step.mfu),
          fmt::format("{:.1f} GiB", c.step.memory_bytes / (1ull << 30)),
          c.step.fits ? "yes" : "NO",
          num(warnings)};
}

Report advise_report(const AdviseFlags& f) {
  const AdviseInput in = advise_input(f);
  const std::vector<Candidate> all = advise(in);
  Report r{.command = "advise", .tables_first = true};
  r.inputs = {{"model", describe(in.model)}, {"cluster", describe(in.cluster)}, {"global_batch", f.global_batch},
              {"micro_batch", f.micro_batch}};
  Table t{.heading = fmt::format("{} on {} x {} devices, global batch {} sequences: layouts, fastest fitting first",
                                 in.model.name, in.cluster.nodes, in.cluster.devices_per_node, f.global_batch),
          .columns = {"#", "dp", "tp", "pp", "zero", "m", "schedule", "recompute", "compress", "step", "tokens/s", "MFU",
                      "memory", "fits", "warn"}};
  std::size_t shown = 0, fitting = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Candidate& c = all[i];
    fitting += c.step.fits;
    if (shown >= static_cast<std::size_t>(f.top) || (!c.step.fits && !f.show_unfit)) continue;
    t.rows.push_back(row_of(i + 1, c));
    nlohmann::json row = describe(c.step.layout);
    row["step_seconds"] = c.step.step_seconds, row["tokens_per_second"] = c.step.tokens_per_second;
    row["mfu"] = c.step.mfu, row["memory_bytes"] = c.step.memory_bytes, row["fits"] = c.step.fits;
    nlohmann::json findings = nlohmann::json::array();
    for (const Finding& finding : c.findings) {
      findings.push_back({{"rule", finding.rule}, {"severity", severity_name(finding.severity)}, {"message", finding.message}});
    }
    row["findings"] = findings;
    t.json_rows.push_back(row);
    ++shown;
  }
  r.tables.push_back(std::move(t));
  r.notes.push_back(fmt::format("{} layouts considered, {} fit in {} per device{}", all.size(), fitting,
                                format_bytes(in.cluster.memory), f.show_unfit ? "" : " (--show-unfit lists the rest)"));
  if (!all.empty()) {
    const Candidate& best = all.front();
    r.sections.push_back({fmt::format("layout #1 in detail (dp {} x tp {} x pp {}, ZeRO-{})", best.step.layout.dp,
                                      best.step.layout.tp, best.step.layout.pp, best.step.layout.zero),
                          best.step.items});
    r.findings = best.findings;
  }
  return r;
}

}  // namespace

Command add_step_command(CLI::App& parent) {
  auto f = std::make_shared<StepFlags>();
  CLI::App* app = parent.add_subcommand(
      "step", "one iteration's time: compute, TP/PP/DP communication (exposed after overlap), bubble, memory");
  add_model_flags(*app, f->model);
  add_cluster_flags(*app, f->cluster);
  add_layout_flags(*app, f->layout);
  add_precision_flags(*app, f->precision);
  return {app, [f] { return step_report(*f); }};
}

Command add_advise_command(CLI::App& parent) {
  auto f = std::make_shared<AdviseFlags>();
  CLI::App* app = parent.add_subcommand("advise", "enumerate (dp, tp, pp, ZeRO, micro-batches, compression) layouts, "
                                                  "rank them, flag the ones that do not fit, explain the checks");
  add_model_flags(*app, f->model);
  add_cluster_flags(*app, f->cluster);
  add_precision_flags(*app, f->precision);
  app->add_option("--global-batch", f->global_batch, "sequences per iteration")->capture_default_str();
  app->add_option("--micro-batch", f->micro_batch, "sequences per micro-batch")->capture_default_str();
  app->add_option("--zero", f->zero, "ZeRO stages to consider")->capture_default_str();
  app->add_option("--schedules", f->schedules, "pipeline schedules to consider")->capture_default_str();
  app->add_option("--recompute", f->recompute, "recomputation modes to consider")->capture_default_str();
  app->add_option("--compression", f->compression, "gradient codecs to consider (none,int8,topk:0.01)")
      ->capture_default_str();
  app->add_option("--chunks", f->chunks, "model chunks per stage for the interleaved schedule")->capture_default_str();
  app->add_option("--top", f->top, "rows to print")->capture_default_str();
  app->add_flag("--show-unfit", f->show_unfit, "also list the layouts that do not fit in memory");
  return {app, [f] { return advise_report(*f); }};
}

}  // namespace braid::plan::cli
