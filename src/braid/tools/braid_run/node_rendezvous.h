// The braid-runs of a multi-node job meeting before any rank starts. Node 0's braid-run hosts
// the launchers' store on --master-addr:--master-port (its ranks' own store, rank 0's, listens
// on port + 1); every braid-run, node 0's too, joins it with the job token, claims its node
// rank, checks that every node was started with the same shape (--nnodes, --nproc-per-node),
// and waits, up to --join-timeout, for all the others. Then a NodeWatch keeps watching.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "braid/bootstrap/store.h"
#include "braid/tools/braid_run/launcher_options.h"
#include "braid/tools/braid_run/node_watch.h"

namespace braid::launcher {

class NodeSession {
 public:
  // Hosts (node 0) and joins the launchers' store and waits for every node. `interrupted` is
  // asked between waits: when it returns true the wait ends with InvalidArgument. Throws
  // Timeout naming the nodes that did not join, InvalidArgument on a node rank claimed twice
  // or a shape that differs, and what the store throws (a wrong token: Mismatch).
  NodeSession(const LauncherOptions& options, const std::string& token, const std::function<bool()>& interrupted);

  NodeWatch& watch() { return *watch_; }

  // After this node's ranks have all ended, with braid-run's exit code `code`: says so, and on
  // node 0, which holds the store, waits until every node has said so too. After a success it
  // waits as long as that takes, unless the job fails elsewhere (then it prints that failure
  // and returns its code) or `pending_signal` returns a signal (128 + signal); after a failure,
  // kLinger at most. Returns braid-run's exit code.
  int finish(int code, const std::function<int()>& pending_signal);

 private:
  const LauncherOptions& options_;
  std::unique_ptr<StoreServer> server_;  // node 0 only
  std::unique_ptr<NodeWatch> watch_;
};

// "1, 3" for the nodes in 0..num_nodes-1 that `present` says are missing.
std::string missing_nodes(int num_nodes, const std::function<bool(int)>& present);

}  // namespace braid::launcher
