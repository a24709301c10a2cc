// braid-trace: works on the trace files ranks write under BRAID_TRACE (docs/tracing.md).
//   braid-trace merge merged.json traces/            # or: merged.json a.json b.json ...
//   braid-trace summary traces/braid-trace-rank0.json merged.json
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "braid/trace/step_table.h"
#include "braid/trace/trace_merge.h"
#include "braid/trace/trace_reader.h"
#include "braid/tools/common/tool_main.h"

namespace {

int merge(const std::string& output, const std::vector<std::string>& inputs) {
  braid::trace::MergeSummary summary = braid::trace::merge_trace_files(inputs, output);
  for (const braid::trace::MergedRank& r : summary.ranks) {
    fmt::print("rank {:>3}  {}  offset {:.3f} ms  host {}\n", r.rank, r.file, r.offset_us / 1000.0, r.hostname);
  }
  fmt::print("wrote {} ({} ranks, {} events)\n", output, summary.ranks.size(), summary.events);
  if (summary.several_hosts) {
    fmt::print("note: the ranks ran on several hosts; they are aligned by their system clocks, so the "
               "timeline is only as exact as the hosts' clock synchronisation (NTP: ~ms)\n");
  }
  return 0;
}

int summary(const std::vector<std::string>& inputs) {
  for (const std::string& file : braid::trace::expand_trace_inputs(inputs)) {
    std::vector<braid::trace::TraceData> ranks = braid::trace::read_trace_file(file);
    fmt::print("{}\n{}", file, braid::trace::format_step_table(ranks));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"braid-trace: merges and summarises the per-rank trace files braid writes under BRAID_TRACE\n"
               "(Chrome-trace JSON: open them in https://ui.perfetto.dev or chrome://tracing)"};
  app.require_subcommand(1);

  std::string merge_output;
  std::vector<std::string> merge_inputs;
  CLI::App* merge_cmd = app.add_subcommand(
      "merge", "join per-rank trace files into one timeline, ranks as processes, aligned by their system-clock anchors");
  merge_cmd->add_option("output", merge_output, "merged trace file to write")->required();
  merge_cmd->add_option("inputs", merge_inputs, "per-rank trace files, or directories of braid-trace-rank<R>.json")
      ->required();

  std::vector<std::string> summary_inputs;
  CLI::App* summary_cmd = app.add_subcommand(
      "summary", "print the per-step counters (compute, communication, exposed communication, overlap, wire bytes)");
  summary_cmd->add_option("files", summary_inputs, "trace files (per-rank or merged), or directories of them")
      ->required();

  // Its InvalidArgument errors are about the input files (missing, already merged), which
  // docs/tracing.md documents as exit 1; usage errors of the command line still exit 2.
  return braid::tools::run_tool(
      "braid-trace", app, argc, argv,
      [&] { return merge_cmd->parsed() ? merge(merge_output, merge_inputs) : summary(summary_inputs); },
      {.invalid_argument_exit = braid::tools::kFailureExitCode});
}
