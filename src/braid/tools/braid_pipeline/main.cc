// braid-pipeline: pipeline-parallel schedules, their simulation, and the runtime measured
// (docs/pipeline.md).
//   braid-pipeline schedule --schedule 1f1b -p 4 -m 8            # ASCII timeline + numbers
//   braid-pipeline schedule --schedule zb1 -p 4 -m 8 --format chrome -o zb1.json
//   braid-pipeline simulate -p 4 -m 8 -v 2 --p2p 0.1              # every schedule side by side
//   braid-run -n 2 braid-pipeline run -m 8 --forward-ms 4          # measured vs simulated bubble
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "braid/base/error.h"
#include "braid/tools/common/tool_main.h"
#include "braid/parallel/timeline_render.h"
#include "pipeline_bench.h"
#include "pipeline_report.h"

namespace {

void add_costs(CLI::App* cmd, braid::parallel::ActionCosts& costs) {
  cmd->add_option("--forward", costs.forward, "forward time of a whole stage (cost units; ms in chrome output)")
      ->capture_default_str();
  cmd->add_option("--backward-input", costs.backward_input, "input-gradient time of a stage (I)")
      ->capture_default_str();
  cmd->add_option("--backward-weight", costs.backward_weight, "weight-gradient time of a stage (W); B = I + W")
      ->capture_default_str();
  cmd->add_option("--p2p", costs.p2p, "time of one activation or gradient transfer")->capture_default_str();
}

int write_or_print(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::ofstream file(output);
  file << text;
  if (!file.good()) {
    std::fprintf(stderr, "braid-pipeline: cannot write %s\n", output.c_str());
    return 1;
  }
  std::printf("wrote %s\n", output.c_str());
  return 0;
}

// What the simulator can hold: it keeps every action (about 7 of 16 bytes per stage, micro-batch
// and chunk) and its place on the timeline, ~320 bytes per (stage, micro-batch, chunk) measured
// (-p 64 -m 4096: 85 MB; -p 2048 -m 2048: 1.3 GB in 4 s). 2^22 of them is as far as a shared
// machine should be asked to go; -p 4096 -m 65536 (2^28, ~86 GB) used to end in std::bad_alloc.
constexpr std::int64_t kMaxScheduleCells = std::int64_t{1} << 22;

// `chunks` names where v came from ("-v 2", "interleaved:2"); empty when v is 1.
void check_simulation_size(int p, int m, int v, const std::string& chunks) {
  const std::int64_t slots = std::int64_t{p} * m * v;
  if (slots <= kMaxScheduleCells) return;
  throw braid::InvalidArgument(
      {.op = "braid-pipeline"},
      fmt::format("-p {} x -m {}{} = {} (stage, micro-batch, chunk) slots is more than the {} the simulator holds "
                  "(about 320 bytes each); lower -p or -m",
                  p, m, v > 1 ? " x " + chunks : "", slots, kMaxScheduleCells));
}

int schedule_command(const std::string& kind, int p, int m, const std::string& format,
                     const braid::parallel::ActionCosts& costs, const std::string& output) {
  const braid::parallel::ParsedKind parsed = braid::parallel::parse_schedule_kind(kind, "--schedule");
  check_simulation_size(p, m, parsed.chunks, kind);
  const braid::parallel::Schedule schedule = braid::parallel::make_schedule({parsed.kind, p, m, parsed.chunks});
  if (format == "actions") return write_or_print(braid::tools::format_action_lists(schedule), output);
  const braid::parallel::SimulationResult result = braid::parallel::simulate(schedule, costs);
  if (format == "chrome") return write_or_print(braid::parallel::simulated_chrome_trace(result), output);
  return write_or_print(braid::tools::format_schedule_report(result), output);
}

int run_command(const braid::tools::PipelineBenchOptions& options) {
  braid::tools::check_pipeline_bench_options(options);  // before joining: a typo should not wait for peers
  braid::Communicator comm = braid::Communicator::init();
  std::fputs(braid::tools::run_pipeline_bench(comm, options).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "braid-pipeline: pipeline-parallel schedules (gpipe, 1f1b, interleaved:V, zb1 alias zb-h1), their simulated\n"
      "timelines and bubbles, and the pipeline runtime measured against them (docs/pipeline.md)"};
  app.require_subcommand(1);

  std::string kind = "1f1b", format = "ascii", output;
  int p = 4, m = 8, v = 2;
  braid::parallel::ActionCosts costs;
  CLI::App* schedule_cmd =
      app.add_subcommand("schedule", "print one schedule: ASCII timeline, action lists or Chrome trace");
  schedule_cmd->add_option("--schedule,-s", kind, "gpipe | 1f1b | interleaved:V | zb1 (alias zb-h1)")->capture_default_str();
  schedule_cmd->add_option("--stages,-p", p, "pipeline stages")->capture_default_str()->check(CLI::Range(1, 4096));
  schedule_cmd->add_option("--microbatches,-m", m, "micro-batches per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  schedule_cmd
      ->add_option("--format,-f", format, "ascii (timeline + numbers), actions (per-stage lists), chrome (JSON)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ascii", "actions", "chrome"}));
  schedule_cmd->add_option("--output,-o", output, "write to this file instead of stdout");
  add_costs(schedule_cmd, costs);

  CLI::App* simulate_cmd =
      app.add_subcommand("simulate", "theoretical vs simulated bubble of every schedule for given costs");
  simulate_cmd->add_option("--stages,-p", p, "pipeline stages")->capture_default_str()->check(CLI::Range(1, 4096));
  simulate_cmd->add_option("--microbatches,-m", m, "micro-batches per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  simulate_cmd->add_option("--chunks,-v", v, "chunks per stage for the interleaved row (1: no interleaved row)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  add_costs(simulate_cmd, costs);

  braid::tools::PipelineBenchOptions bench;
  std::string schedules = "gpipe,1f1b,interleaved:2,zb1";
  CLI::App* run_cmd = app.add_subcommand(
      "run",
      "run the pipeline runtime with synthetic stages, one per rank (start it with braid-run -n P), and print "
      "measured bubble next to theoretical and simulated");
  run_cmd->add_option("--schedules", schedules, "comma-separated schedules (gpipe, 1f1b, interleaved:V, zb1 alias zb-h1)")
      ->capture_default_str();
  run_cmd->add_option("--microbatches,-m", bench.microbatches, "micro-batches per step")->capture_default_str();
  run_cmd->add_option("--forward-ms", bench.costs.forward_ms, "forward compute per stage and micro-batch")
      ->capture_default_str();
  run_cmd->add_option("--backward-input-ms", bench.costs.backward_input_ms, "input-gradient compute (I)")
      ->capture_default_str();
  run_cmd->add_option("--backward-weight-ms", bench.costs.backward_weight_ms, "weight-gradient compute (W)")
      ->capture_default_str();
  run_cmd
      ->add_option("--activation-elements", bench.costs.activation_elements, "floats per activation / gradient message")
      ->capture_default_str();
  std::string work = "timed";
  run_cmd
      ->add_option("--work", work,
                   "timed: each action computes until its time is up (exact durations: isolates the runtime's own "
                   "overhead); fixed: a calibrated amount of work (what a real model sees; needs a quiet machine)")
      ->capture_default_str()
      ->check(CLI::IsMember({"timed", "fixed"}));
  run_cmd->add_option("--p2p-ms", bench.p2p_ms, "transfer time the simulator assumes")->capture_default_str();
  run_cmd->add_option("--steps", bench.steps, "measured steps")->capture_default_str();
  run_cmd->add_option("--warmup", bench.warmup, "unmeasured steps first")->capture_default_str();
  run_cmd->add_option("--trace", bench.trace_dir, "write each schedule's per-rank traces under DIR/<schedule>/");

  return braid::tools::run_tool("braid-pipeline", app, argc, argv, [&] {
    if (schedule_cmd->parsed()) return schedule_command(kind, p, m, format, costs, output);
    if (simulate_cmd->parsed()) {
      check_simulation_size(p, m, v, fmt::format("-v {}", v));
      std::fputs(braid::tools::format_simulation_table(p, m, v, costs).c_str(), stdout);
      return 0;
    }
    bench.costs.timed = work == "timed";
    bench.schedules.clear();
    for (std::size_t start = 0; start <= schedules.size();) {
      std::size_t comma = std::min(schedules.find(',', start), schedules.size());
      if (comma > start) bench.schedules.push_back(schedules.substr(start, comma - start));
      start = comma + 1;
    }
    return run_command(bench);
  });
}
