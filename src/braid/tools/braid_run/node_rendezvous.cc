#include "braid/tools/braid_run/node_rendezvous.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/bootstrap/socket.h"

namespace braid::launcher {

namespace {

constexpr int kLauncherClient = -1;
constexpr const char* kShapeKey = "braid-run/shape";
// How often a joining braid-run looks for the nodes still missing: prompt, and not a spin.
constexpr std::chrono::milliseconds kJoinPoll{200};

std::string shape_of(const LauncherOptions& o) {
  return fmt::format("--nnodes {} --nproc-per-node {}", o.nodes.num_nodes, o.num_ranks);
}

std::unique_ptr<StoreServer> host_store(const LauncherOptions& o, const std::string& token) {
  try {
    return std::make_unique<StoreServer>(o.master_addr, static_cast<std::uint16_t>(o.master_port), token);
  } catch (const SystemError& e) {
    throw InvalidArgument({.op = "launch"}, fmt::format("node 0 cannot listen on {}:{} for the other nodes ({}): "
                                                        "--master-addr must be an address of node 0, the port free",
                                                        o.master_addr, o.master_port, e.detail()));
  }
}

// Claims this node's rank and checks the job's shape against node 0's.
void register_node(const LauncherOptions& o, StoreClient& store, Deadline deadline) {
  const int node = o.nodes.node_rank;
  const std::string me = fmt::format("{} pid {}", net::hostname(), ::getpid());
  if (store.add(fmt::format("braid-run/claim/{}", node), 1, deadline) > 1) {
    throw InvalidArgument({.op = "launch"}, fmt::format("--node-rank {} is already taken by the braid-run on {}; "
                                                        "give each node its own --node-rank",
                                                        node, store.get(node_key(node), deadline)));
  }
  store.set(node_key(node), me, deadline);
  if (node == 0) store.set(kShapeKey, shape_of(o), deadline);
  const std::string shape = store.get(kShapeKey, deadline);
  if (shape != shape_of(o)) {
    throw InvalidArgument({.op = "launch"}, fmt::format("node {} was started with {}, node 0 with {}: every node's "
                                                        "braid-run needs the same",
                                                        node, shape_of(o), shape));
  }
}

void wait_for_nodes(const LauncherOptions& o, StoreClient& store, Deadline deadline,
                    const std::function<bool()>& interrupted) {
  // Each look gets its own deadline: the join deadline running out is reported below, by name.
  auto present = [&](int node) { return store.check({node_key(node)}, Deadline::after(kCallLimit)); };
  while (true) {
    const bool last_look = deadline.expired();
    std::string missing = missing_nodes(o.nodes.num_nodes, present);
    if (missing.empty()) return;
    if (interrupted()) throw InvalidArgument({.op = "launch"}, "interrupted while waiting for the other nodes");
    if (last_look) {
      throw Timeout({.op = "launch"}, fmt::format("node {}: node(s) {} of {} did not join within {} s "
                                                  "(--join-timeout): start braid-run --node-rank N on each, with "
                                                  "the same --master-addr {} --master-port {} and job token",
                                                  o.nodes.node_rank, missing, o.nodes.num_nodes,
                                                  o.nodes.join_timeout_seconds, o.master_addr, o.master_port));
    }
    std::this_thread::sleep_for(kJoinPoll);
  }
}

}  // namespace

std::string missing_nodes(int num_nodes, const std::function<bool(int)>& present) {
  std::string out;
  for (int node = 0; node < num_nodes; ++node) {
    if (!present(node)) out += (out.empty() ? "" : ", ") + std::to_string(node);
  }
  return out;
}

NodeSession::NodeSession(const LauncherOptions& options, const std::string& token,
                         const std::function<bool()>& interrupted)
    : options_(options) {
  const Deadline deadline = Deadline::after(Seconds(options.nodes.join_timeout_seconds));
  if (options.nodes.node_rank == 0) server_ = host_store(options, token);
  const auto port = static_cast<std::uint16_t>(options.master_port);
  std::unique_ptr<StoreClient> store;
  try {
    store = std::make_unique<StoreClient>(options.master_addr, port, token, kLauncherClient, deadline);
    register_node(options, *store, deadline);
  } catch (const Timeout& e) {
    throw Timeout({.op = "launch"}, fmt::format("node {}: no rendezvous with node 0's braid-run at {}:{} within {} s "
                                                "(--join-timeout): is it running, with this --master-addr and "
                                                "--master-port? ({})",
                                                options.nodes.node_rank, options.master_addr, options.master_port,
                                                options.nodes.join_timeout_seconds, e.detail()));
  }
  wait_for_nodes(options, *store, deadline, interrupted);
  watch_ = std::make_unique<NodeWatch>(NodeWatchSetup{.store_host = options.master_addr,
                                                      .store_port = port,
                                                      .token = token,
                                                      .node_rank = options.nodes.node_rank,
                                                      .num_nodes = options.nodes.num_nodes,
                                                      .ranks_per_node = options.num_ranks});
}

namespace {

int report_failure(const NodeFailure& failure) {
  std::string line = fmt::format("braid-run: job failed: {}\n", failure.message);
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  return failure.exit_code;
}

}  // namespace

int NodeSession::finish(int code, const std::function<int()>& pending_signal) {
  watch_->publish_exit(code);
  if (options_.nodes.node_rank != 0) {
    // This node's ranks succeeded, but if the job failed elsewhere, so did this braid-run.
    std::optional<NodeFailure> failure = code == 0 ? watch_->published_failure() : std::nullopt;
    return failure ? report_failure(*failure) : code;
  }
  // The store must outlive every node's use of it: wait for their exits (or a failure).
  const Deadline linger = code == 0 ? Deadline::never() : Deadline::after(kLinger);
  while (!watch_->all_exited() && !linger.expired()) {
    if (std::optional<NodeFailure> failure = watch_->failure(); failure && code == 0) return report_failure(*failure);
    if (int signal = pending_signal(); signal != 0 && code == 0) return 128 + signal;
    std::this_thread::sleep_for(kJoinPoll);
  }
  std::optional<NodeFailure> failure = code == 0 ? watch_->published_failure() : std::nullopt;
  return failure ? report_failure(*failure) : code;
}

}  // namespace braid::launcher
