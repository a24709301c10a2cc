// Notices a lost peer while a stream only polls. Work::test() drives progress but checks no
// peer's liveness (only a blocking wait does, transport/fabric.h), so a poll loop waiting on a
// decode rank that died would wait for BRAID_TIMEOUT; this checks the awaited peers' health at
// most every 20 ms of the polls, which raises PeerLost (and poisons the communicator, as any
// wait would) within that of the loss being visible.
//
// Thread-safety: one thread, as the Communicator.
#pragma once

#include <chrono>
#include <span>
#include <vector>

#include "braid/comm/communicator.h"

namespace braid::serving {

class PeerWatch {
 public:
  PeerWatch(Communicator& comm, const char* op) : comm_(comm), op_(op) {}

  // Whether the last check is 20 ms old (then call check).
  bool due() const { return std::chrono::steady_clock::now() - last_ >= kInterval; }
  // Checks the given communicator ranks; throws (PeerLost, or the poison) what it finds.
  void check(std::span<const int> awaited);

 private:
  static constexpr std::chrono::milliseconds kInterval{20};
  Communicator& comm_;
  const char* op_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<int> world_ranks_;
};

}  // namespace braid::serving
