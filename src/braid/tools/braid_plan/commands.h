// braid-plan's subcommands. Each adds itself to the CLI11 app with its own flags and returns
// the function that computes its Report once the command line has been parsed.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "report.h"

namespace braid::plan::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<Report()> run;
};

// Calculators (calculator_commands.cc).
Command add_volume_command(CLI::App& parent);
Command add_memory_command(CLI::App& parent);
Command add_kv_command(CLI::App& parent);
Command add_bubble_command(CLI::App& parent);
Command add_quant_command(CLI::App& parent);
Command add_kernel_command(CLI::App& parent);
// The cost model (network_commands.cc).
Command add_collective_command(CLI::App& parent);
Command add_calibrate_command(CLI::App& parent);
// Step time and layouts (layout_commands.cc).
Command add_step_command(CLI::App& parent);
Command add_advise_command(CLI::App& parent);
// braid-train's GPT, bytes per step on each axis (traffic_commands.cc).
Command add_traffic_command(CLI::App& parent);

}  // namespace braid::plan::cli
