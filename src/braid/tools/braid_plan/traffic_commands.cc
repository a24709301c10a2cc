// traffic: bytes per optimizer step on each mesh axis for braid-train's GPT (plan/training_traffic.h),
// the numbers braid-train's per-axis byte counts are checked against.
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "braid/plan/training_traffic.h"
#include "braid/plan/units.h"
#include "commands.h"

namespace braid::plan::cli {

namespace {

struct TrafficFlags {
  std::string preset = "gpt-tiny";
  std::optional<int> vocab, width, layers, heads, context;  // unset: the preset's value
  TrainingLayout layout;
};

GptShape shape_from(const TrafficFlags& f) {
  GptShape m = gpt_preset(f.preset, f.vocab.value_or(GptShape{}.vocab));
  auto take = [](const std::optional<int>& flag, const char* name, int& field) {
    if (!flag) return;
    require_range(name, *flag, 1, 1e9);
    field = *flag;
  };
  take(f.width, "--width", m.width);
  take(f.layers, "--layers", m.layers);
  take(f.heads, "--heads", m.heads);
  take(f.context, "--context", m.context);
  require_range("--vocab", m.vocab, 1, 1e9);
  return m;
}

Report traffic_report(const TrafficFlags& f) {
  const GptShape m = shape_from(f);
  const TrainingLayout& l = f.layout;
  const TrainingTraffic t = training_traffic(m, l);
  Report r{.command = "traffic"};
  r.inputs = {{"model", {{"preset", f.preset}, {"vocab", m.vocab}, {"width", m.width}, {"layers", m.layers},
                         {"heads", m.heads}, {"context", m.context}}},
              {"layout", {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"chunks", l.chunks},
                          {"microbatches", l.microbatches}, {"micro_batch", l.micro_batch},
                          {"sequence_parallel", l.sequence_parallel}}}};
  // The three answers first; the sections below repeat each with the terms it is made of.
  const Estimate& dp = find_estimate(t.dp_terms, "dp_bytes_per_step");
  const Estimate& tp = find_estimate(t.tp_terms, "tp_bytes_per_step");
  const Estimate& pp = find_estimate(t.pp_terms, "pp_bytes_per_step");
  r.sections.push_back({fmt::format("bytes per optimizer step, mean per rank: dp {} x tp {} x pp {} (v = {}), M = {}, "
                                    "b = {}{}",
                                    l.dp, l.tp, l.pp, l.chunks, l.microbatches, l.micro_batch,
                                    l.sequence_parallel ? ", sequence parallel" : ""),
                        {dp, tp, pp}});
  r.sections.push_back({fmt::format("parameters: V = {}, h = {}, L = {}, heads = {}, t = {} (fp32)", m.vocab, m.width,
                                    m.layers, m.heads, m.context),
                        t.params});
  r.sections.push_back({"tensor parallel: S = b t h x 4 B per collective, summed over the stages", t.tp_terms});
  r.sections.push_back({"pipeline: activation forward and gradient backward per boundary and micro-batch", t.pp_terms});
  r.notes.push_back("algorithm bytes as in plan/comm_volume.h (allreduce 2 (n-1)/n S, allgather and reduce-scatter "
                    "(n-1)/n S, point-to-point the message), averaged over all dp x tp x pp ranks; independent of "
                    "the stage partition");
  return r;
}

}  // namespace

Command add_traffic_command(CLI::App& parent) {
  auto f = std::make_shared<TrafficFlags>();
  CLI::App* app = parent.add_subcommand(
      "traffic", "braid-train's GPT: bytes per optimizer step on each axis (dp, tp, pp), mean per rank");
  app->add_option("--preset", f->preset, "gpt-tiny (width 128, 6 layers, 4 heads, context 64) or gpt-small (512, 8, 8, 128)")
      ->capture_default_str();
  app->add_option("--vocab", f->vocab, "vocabulary (padded up to a multiple of tp; default 96)");
  app->add_option("--width", f->width, "model width h (default the preset's)");
  app->add_option("--layers", f->layers, "transformer blocks L (default the preset's)");
  app->add_option("--heads", f->heads, "attention heads (default the preset's)");
  app->add_option("--context", f->context, "tokens per sequence t (default the preset's)");
  app->add_option("--dp", f->layout.dp, "data-parallel replicas")->capture_default_str();
  app->add_option("--tp", f->layout.tp, "tensor-parallel degree")->capture_default_str();
  app->add_option("--pp", f->layout.pp, "pipeline stages")->capture_default_str();
  app->add_option("--chunks,-v", f->layout.chunks, "virtual stages per pipeline stage (interleaved)")->capture_default_str();
  app->add_option("--microbatches,-m", f->layout.microbatches, "micro-batches per optimizer step (M)")
      ->capture_default_str();
  app->add_option("--micro-batch", f->layout.micro_batch, "sequences per micro-batch (b)")->capture_default_str();
  app->add_flag("--sp,--sequence-parallel", f->layout.sequence_parallel, "sequence parallelism with tp");
  return {app, [f] { return traffic_report(*f); }};
}

}  // namespace braid::plan::cli
