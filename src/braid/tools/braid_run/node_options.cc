#include "braid/tools/braid_run/node_options.h"

#include <charconv>
#include <cmath>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "braid/tools/braid_run/launcher_options.h"

namespace braid::launcher {

namespace {

// "host:port", "[v6]:port", "host" (port then the default). Returns the problem, "" when none.
std::string split_endpoint(const std::string& endpoint, std::string& host, int& port) {
  std::string port_text;
  if (endpoint.starts_with('[')) {
    const auto close = endpoint.find(']');
    if (close == std::string::npos) return fmt::format("--rdzv-endpoint '{}': missing ']'", endpoint);
    host = endpoint.substr(1, close - 1);
    if (close + 1 < endpoint.size()) {
      if (endpoint[close + 1] != ':') return fmt::format("--rdzv-endpoint '{}': expected ':' after ']'", endpoint);
      port_text = endpoint.substr(close + 2);
    }
  } else if (const auto colon = endpoint.rfind(':'); colon != std::string::npos) {
    host = endpoint.substr(0, colon);
    port_text = endpoint.substr(colon + 1);
  } else {
    host = endpoint;
  }
  if (host.empty()) return fmt::format("--rdzv-endpoint '{}': no host", endpoint);
  if (port_text.empty()) return "";
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 || port > 65535) {
    return fmt::format("--rdzv-endpoint '{}': the port must be a number in 1..65535", endpoint);
  }
  return "";
}

}  // namespace

void add_node_flags(CLI::App& app, LauncherOptions& options) {
  NodeOptions& n = options.nodes;
  app.add_option("--nnodes", n.num_nodes, "number of nodes, one braid-run on each (torchrun's --nnodes)")
      ->capture_default_str();
  app.add_option("--node-rank,--node_rank", n.node_rank, "this node's rank, 0..nnodes-1; node 0 hosts the store")
      ->capture_default_str();
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", n.rdzv_endpoint,
                 "host[:port] of node 0's store: torchrun's spelling of --master-addr/--master-port");
  app.add_option("--token-file", n.token_file,
                 "file holding the job token (mode 0600 or stricter); default: BRAID_JOB_TOKEN");
  app.add_option("--join-timeout", n.join_timeout_seconds, "seconds to wait for the other nodes' braid-runs")
      ->capture_default_str();
}

bool is_multinode(const LauncherOptions& options) { return options.nodes.num_nodes > 1; }

std::string resolve_node_options(LauncherOptions& o, bool master_addr_given, bool master_port_given) {
  NodeOptions& n = o.nodes;
  if (n.num_nodes < 1) return fmt::format("--nnodes must be at least 1, got {}", n.num_nodes);
  if (n.node_rank < 0 || n.node_rank >= n.num_nodes) {
    return fmt::format("--node-rank must be in 0..{} (--nnodes {}), got {}", n.num_nodes - 1, n.num_nodes, n.node_rank);
  }
  if (!std::isfinite(n.join_timeout_seconds) || !(n.join_timeout_seconds > 0)) {
    return fmt::format("--join-timeout must be a number of seconds > 0, got {}", n.join_timeout_seconds);
  }
  if (!n.rdzv_endpoint.empty()) {
    if (master_addr_given || master_port_given) {
      return "--rdzv-endpoint and --master-addr/--master-port name the same store: give one spelling";
    }
    if (std::string problem = split_endpoint(n.rdzv_endpoint, o.master_addr, o.master_port); !problem.empty()) {
      return problem;
    }
  }
  if (is_multinode(o) && o.master_port == 0) o.master_port = kDefaultNodeStorePort;
  // The ranks' own store (rank 0's) listens on the next port: it must exist.
  if (is_multinode(o) && o.master_port == 65535) return "--master-port 65535: a multi-node job also needs port + 1";
  return "";
}

}  // namespace braid::launcher
