// braid-run's multi-node flags (torchrun's spellings): --nnodes, --node-rank, --rdzv-endpoint,
// --token-file and --join-timeout. Kept apart from the single-host flags so the two grow apart
// without touching each other; launcher_options.cc calls add_node_flags and validate_node_options.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace braid::launcher {

struct LauncherOptions;

struct NodeOptions {
  // --nnodes: how many braid-runs (one per node) form the job. 1 is the single-host launcher.
  int num_nodes = 1;
  // --node-rank (torchrun's --node_rank): this node's place, 0..nnodes-1. Node 0 hosts the
  // launchers' store; ranks are numbered node-major (node i holds ranks i*K .. i*K+K-1).
  int node_rank = 0;
  // --token-file: a file holding the job token (readable by its owner only); else BRAID_JOB_TOKEN.
  std::string token_file;
  // --join-timeout: seconds a braid-run waits for the other nodes' braid-runs to join.
  double join_timeout_seconds = 120.0;
  // --rdzv-endpoint host[:port], as given; parsed into master_addr / master_port.
  std::string rdzv_endpoint;
};

// The port a multi-node job uses when none is given (torchrun's default MASTER_PORT).
inline constexpr int kDefaultNodeStorePort = 29500;

// Adds the multi-node flags to `app`, filling `options.nodes`.
void add_node_flags(CLI::App& app, LauncherOptions& options);

// Applies --rdzv-endpoint and the multi-node default port to `options`, and returns the first
// problem with the multi-node flags ("" when none).
std::string resolve_node_options(LauncherOptions& options, bool master_addr_given, bool master_port_given);

// Whether `options` describes a job of more than one braid-run.
bool is_multinode(const LauncherOptions& options);

}  // namespace braid::launcher
