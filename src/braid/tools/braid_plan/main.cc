// braid-plan: sizes a distributed training or inference job before it runs (docs/planner.md).
//   braid-plan volume --model llama-70b --dp 64 --explain
//   braid-plan memory --model llama-7b --dp 8 --zero 3
//   braid-plan kv --model llama-70b --tokens 2048 --block-size 16
//   braid-plan bubble --pp 4 -m 8
//   braid-plan collective --op allreduce --bytes 14GB --ranks 8 --link nvlink-a100
//   braid-plan step --model llama-70b --nodes 8 --tp 8 --pp 4 -m 32 --json
//   braid-plan advise --model llama-70b --nodes 8 --global-batch 512
//   braid-plan traffic --preset gpt-small --vocab 96 --tp 2 -m 4 --micro-batch 4 --sp
//   braid-plan calibrate allreduce-2.json allreduce-4.json -o link.json
//   braid-plan calibrate --model link.json later-allreduce-4.json   (held-out check)
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "braid/tools/common/tool_main.h"
#include "commands.h"

int main(int argc, char** argv) {
  using namespace braid::plan::cli;
  CLI::App app{"braid-plan: communication volume, pipeline bubble, memory and KV-cache calculators, the alpha-beta "
               "cost model (calibrated from braid-bench --json), parallel-layout advice and braid-train's bytes per step "
               "on each mesh axis.\n"
               "Sizes take units: 7B, 70e9, 80GiB, 256M, 400Gbps, 25GB/s, 5us, 989T."};
  app.require_subcommand(1);
  app.fallthrough();
  bool json = false, explain = false;
  app.add_flag("--json", json, "print the results as one JSON document");
  app.add_flag("--explain", explain, "print each formula and the same formula with the numbers substituted");
  std::vector<Command> commands{add_volume_command(app),     add_memory_command(app),  add_kv_command(app),
                                add_bubble_command(app),     add_collective_command(app), add_step_command(app),
                                add_advise_command(app),     add_calibrate_command(app), add_quant_command(app),
                                add_kernel_command(app),     add_traffic_command(app)};
  return braid::tools::run_tool("braid-plan", app, argc, argv, [&] {
    for (const Command& command : commands) {
      if (!command.app->parsed()) continue;
      const Report report = command.run();
      if (json) {
        std::fputs((render_json(report).dump(2) + "\n").c_str(), stdout);
      } else {
        std::fputs(render_text(report, explain).c_str(), stdout);
      }
      return 0;
    }
    return braid::tools::kFailureExitCode;  // unreachable: CLI11 requires one subcommand
  });
}
