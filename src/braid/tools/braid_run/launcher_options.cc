#include "braid/tools/braid_run/launcher_options.h"

#include <algorithm>
#include <cmath>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "braid/tools/braid_run/job_environment.h"
#include "braid/tools/braid_run/node_environment.h"

namespace braid::launcher {

namespace {

constexpr const char* kDescription =
    "braid-run -n N [OPTIONS] [--] PROG [ARGS...]\n\n"
    "Starts N rank processes of PROG on this host with the BRAID_* environment a braid job\n"
    "needs, prefixes their output with \"[rank] \", and stops them all when one fails.\n"
    "Across nodes, one braid-run per node (torchrun's flags): braid-run --nnodes 2 --node-rank I\n"
    "--master-addr NODE0 --master-port P --nproc-per-node K PROG (docs/multinode.md).";
constexpr const char* kFooter =
    "Example: braid-run -n 4 ./train --epochs 3\n"
    "Everything from PROG on is passed to PROG; put -- before PROG if it starts with '-'.\n"
    "Exit code: 0 when every rank exits 0; the failing rank's code (128+N if killed by signal N);\n"
    "124 on --timeout; 130/143 on SIGINT/SIGTERM; 126/127 when PROG cannot be executed;\n"
    "2 on a usage error. With --elastic: 0 when at least --min-ranks ranks exit 0, else 1 (or\n"
    "the last lost rank's code once fewer than --min-ranks are left). See docs/launcher.md.";

struct Flags {
  LauncherOptions options;
  bool no_prefix = false;
  std::string bind = "auto";
};

void add_flags(CLI::App& app, Flags& flags) {
  LauncherOptions& o = flags.options;
  app.add_option("-n,--nproc,--nproc-per-node,--nproc_per_node", o.num_ranks,
                 "number of rank processes to start (on this node)")->required();
  app.add_option("--master-addr,--master_addr", o.master_addr, "address of rank 0's rendezvous store (node 0's)")->capture_default_str();
  app.add_option("--master-port,--master_port", o.master_port,
                 "port of the rendezvous store (default: a free port; 29500 with --nnodes > 1)");
  app.add_option("--grace", o.grace_seconds, "seconds between SIGTERM and SIGKILL when stopping ranks")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_seconds, "wall-clock limit of the job in seconds (default: none)");
  app.add_flag("--elastic", o.elastic,
               "keep the job running when a rank dies: braid-run serves the store, reports the death and "
               "the survivors continue without it (braid-train --elastic)");
  app.add_option("--min-ranks", o.min_ranks,
                 "with --elastic: fail the job once fewer than this many ranks are left running")
      ->capture_default_str();
  app.add_option("--max-restarts", o.max_restarts,
                 "with --elastic: start a lost rank's program again, at most this many times in the job; the new "
                 "process is a newcomer (a fresh member id, BRAID_ELASTIC_JOIN) that rejoins at a step boundary")
      ->capture_default_str();
  app.add_option("--bind-to", flags.bind,
                 "pin each rank to one CPU of braid-run's affinity mask: core (local rank i on the i-th CPU, wrapping "
                 "around), none (the scheduler places them), auto (core when the node's ranks do not outnumber the CPUs)")
      ->capture_default_str();
  app.add_flag("--no-prefix", flags.no_prefix, "pass rank output through unchanged, without \"[rank] \"");
  // No extra args: each --env takes one value, so `--env A=1 PROG` never swallows PROG.
  app.add_option("--env", o.extra_env, "KEY=VALUE added to every rank's environment (repeatable)")
      ->allow_extra_args(false);
  add_node_flags(app, o);
  // Everything from the first positional argument on is the rank program's command line.
  app.prefix_command();
}

// Splits what CLI11 left over into the program's command line. An unknown option before
// PROG is left over too, and must be reported rather than executed.
std::string take_command(std::vector<std::string> rest, LauncherOptions& options) {
  bool after_separator = !rest.empty() && rest.front() == "--";
  if (after_separator) rest.erase(rest.begin());
  if (!after_separator && !rest.empty() && rest.front().starts_with('-')) {
    return fmt::format("unknown option '{}'", rest.front());
  }
  options.command = std::move(rest);
  return "";
}

ParseOutcome usage_error(const std::string& message) {
  return {.exit_code = kUsageExitCode,
          .err = fmt::format("braid-run: {}\nRun with --help for more information.\n", message)};
}

std::string validate_env_entry(const std::string& entry, bool multinode) {
  auto eq = entry.find('=');
  if (eq == std::string::npos || eq == 0) return fmt::format("--env expects KEY=VALUE, got '{}'", entry);
  std::string_view key = std::string_view(entry).substr(0, eq);
  for (const env::Variable& var : launcher_variables()) {
    if (key == var.name) return fmt::format("--env cannot set {}: braid-run sets it for each rank", key);
  }
  for (std::string_view name : multinode ? node_variable_names() : std::span<const std::string_view>{}) {
    if (key == name) return fmt::format("--env cannot set {}: braid-run sets it for each rank of a multi-node job", key);
  }
  return "";
}

}  // namespace

std::string validate_launcher_options(const LauncherOptions& o) {
  if (o.num_ranks < 1) return fmt::format("-n must be at least 1, got {}", o.num_ranks);
  if (o.command.empty()) return "no program given (usage: braid-run -n N [--] PROG [ARGS...])";
  if (o.master_addr.empty()) return "--master-addr must not be empty";
  if (o.master_port < 0 || o.master_port > 65535) {
    return fmt::format("--master-port must be in 0..65535, got {}", o.master_port);
  }
  if (!std::isfinite(o.grace_seconds) || o.grace_seconds < 0) {
    return fmt::format("--grace must be a number of seconds >= 0, got {}", o.grace_seconds);
  }
  if (o.timeout_seconds && !(*o.timeout_seconds > 0)) {
    return fmt::format("--timeout must be a number of seconds > 0, got {}", *o.timeout_seconds);
  }
  if (o.min_ranks < 1 || o.min_ranks > o.num_ranks) {
    return fmt::format("--min-ranks must be in 1..{} (-n), got {}", o.num_ranks, o.min_ranks);
  }
  if (o.min_ranks != 1 && !o.elastic) return "--min-ranks needs --elastic (without it one lost rank stops the job)";
  if (o.max_restarts < 0) return fmt::format("--max-restarts must be >= 0, got {}", o.max_restarts);
  if (o.max_restarts != 0 && !o.elastic) {
    return "--max-restarts needs --elastic (a restarted process rejoins an elastic job at a step boundary)";
  }
  if (o.elastic && o.nodes.num_nodes > 1) {
    return "--elastic runs on one host for now: across nodes the store is node 0's braid-run's, and a lost node's "
           "ranks are not reported to the survivors yet";
  }
  for (const std::string& entry : o.extra_env) {
    if (std::string problem = validate_env_entry(entry, is_multinode(o)); !problem.empty()) return problem;
  }
  return "";
}

std::uint64_t descriptors_needed(const LauncherOptions& o) {
  constexpr std::uint64_t kReserve = 32;
  const std::uint64_t per_rank = o.prefix_output ? 2 : 0;
  return kReserve + per_rank * static_cast<std::uint64_t>(std::max(o.num_ranks, 0));
}

std::string check_descriptor_limit(const LauncherOptions& o, std::uint64_t soft_limit, std::uint64_t hard_limit) {
  const std::uint64_t need = descriptors_needed(o);
  if (need <= soft_limit) return "";
  std::string fix = need <= hard_limit
                        ? fmt::format("raise it with `ulimit -n {}` (the hard limit allows up to {})", need, hard_limit)
                        : fmt::format("the hard limit is {}, so raise that first (as root: limits.conf, or LimitNOFILE= "
                                      "for a systemd service), then `ulimit -n {}`", hard_limit, need);
  return fmt::format("-n {} needs {} file descriptors in braid-run (2 per rank for the output pipes, plus {}), but its "
                     "limit (RLIMIT_NOFILE) is {}: {}; or pass --no-prefix (no pipes), or start fewer ranks",
                     o.num_ranks, need, descriptors_needed(LauncherOptions{.prefix_output = false}), soft_limit, fix);
}

ParseOutcome parse_launcher_options(std::span<const std::string> args) {
  CLI::App app{kDescription, "braid-run"};
  app.footer(kFooter);
  Flags flags;
  add_flags(app, flags);

  std::vector<const char*> argv{"braid-run"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    return {.exit_code = 0, .out = app.help()};
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  flags.options.prefix_output = !flags.no_prefix;
  if (std::optional<BindPolicy> bind = parse_bind_policy(flags.bind)) {
    flags.options.bind = *bind;
  } else {
    return usage_error(fmt::format("--bind-to must be none, core or auto, got '{}'", flags.bind));
  }
  if (std::string problem = resolve_node_options(flags.options, app.count("--master-addr") > 0,
                                                 app.count("--master-port") > 0);
      !problem.empty()) {
    return usage_error(problem);
  }
  if (std::string problem = take_command(app.remaining(), flags.options); !problem.empty()) {
    return usage_error(problem);
  }
  if (std::string problem = validate_launcher_options(flags.options); !problem.empty()) {
    return usage_error(problem);
  }
  return {.options = std::move(flags.options)};
}

}  // namespace braid::launcher
