// How the braid-runs of a multi-node job learn that the job failed somewhere else. Each one
// runs a NodeWatch: a thread that, once a second, adds to its node's heartbeat counter in node
// 0's store and looks for the "job failed" key; node 0's watch also notices a node whose
// heartbeat stopped (its braid-run SIGKILLed, its link cut) and publishes that as the failure.
// A watch that loses the store itself (node 0 gone, or unreachable) reports that.
//
// Detection bounds (docs/multinode.md): a failure published by a braid-run reaches the others
// within kBeatPeriod + a store round trip; a silent node is declared lost after kNodeSilence;
// a lost store is noticed within kBeatPeriod + kCallLimit. Node 0's braid-run, which holds the
// store, lingers after a failure until every node has published its exit (kLinger at most), so
// that they read the failure instead of only losing the store.
//
// Thread-safety: construct, call and destroy from braid-run's main thread; the watch's own
// thread only talks to the store through its own client and reports under a mutex.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "braid/base/clock.h"
#include "braid/base/unique_fd.h"
#include "braid/bootstrap/store.h"

namespace braid::launcher {

inline constexpr Seconds kBeatPeriod{1.0};
inline constexpr Seconds kCallLimit{3.0};
inline constexpr Seconds kNodeSilence{6.0};
inline constexpr Seconds kLinger{kNodeSilence + kCallLimit + kBeatPeriod};

// Why the job stopped: braid-run's exit code and the line it prints, naming node and rank.
struct NodeFailure {
  int exit_code = 1;
  std::string message;
};

// The keys the braid-runs share (ranks use other names in their own store).
std::string node_key(int node);
std::string beat_key(int node);
std::string exited_key(int node);
inline constexpr const char* kFailedKey = "braid-run/failed";

struct NodeWatchSetup {
  std::string store_host;
  std::uint16_t store_port = 0;
  std::string token;
  int node_rank = 0;
  int num_nodes = 1;
  int ranks_per_node = 1;
};

class NodeWatch {
 public:
  // Connects (two clients: the thread's and the caller's) and starts the thread.
  explicit NodeWatch(NodeWatchSetup setup);
  ~NodeWatch();
  NodeWatch(const NodeWatch&) = delete;
  NodeWatch& operator=(const NodeWatch&) = delete;

  // Readable (an eventfd) once failure() has a value.
  int fd() const { return event_.get(); }
  std::optional<NodeFailure> failure();
  // Publishes this node's failure for the others; the first failure of the job is the one
  // every braid-run reports. Best effort: a store that is gone is noticed by the others.
  void publish_failure(const NodeFailure& failure) noexcept;
  // Says this node's braid-run is about to exit with `exit_code` (so node 0 stops expecting
  // its heartbeat, and knows it has seen the job's fate).
  void publish_exit(int exit_code) noexcept;
  // The job's failure as published in the store, if any (the watch thread may not have read
  // it yet); nullopt as well when the store cannot be read.
  std::optional<NodeFailure> published_failure() noexcept;
  // Whether every node has published its exit (node 0 waits for that before closing the store).
  bool all_exited() noexcept;

 private:
  void run();
  std::optional<NodeFailure> observe();
  std::optional<NodeFailure> check_silent_nodes();
  void report(NodeFailure failure);

  NodeWatchSetup setup_;
  StoreClient thread_store_;
  StoreClient caller_store_;
  UniqueFd event_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::optional<NodeFailure> failure_;
  // Node 0 only: each node's last heartbeat value and when it last changed.
  std::map<int, std::pair<std::string, Clock::time_point>> beats_;
  std::thread thread_;
};

// "<code> <message>" as stored under kFailedKey, and back (a malformed value reads as code 1).
std::string encode_failure(const NodeFailure& failure);
NodeFailure decode_failure(const std::string& value);

}  // namespace braid::launcher
