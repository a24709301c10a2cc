// What rendezvous needs from a key-value store: publish a key, read one (waiting until it
// exists), wait for several. braid's own TCP store (StoreClient, store.h) is one; a framework
// that already rendezvoused its ranks can hand braid its own store instead (the Python backend
// wraps torch.distributed's c10d::Store), so braid joins a job through whatever found the peers.
//
// Semantics every implementation keeps: set replaces the value and wakes waiters; get and wait
// block until the keys exist or the deadline passes (braid::Timeout naming the keys), and a
// store that went away is braid::PeerLost.
//
// Thread-safety: as the implementation says; braid uses one store from one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "braid/base/clock.h"

namespace braid {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, std::string_view value, Deadline deadline) = 0;
  virtual std::string get(const std::string& key, Deadline deadline) = 0;
  virtual void wait(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // The host that serves the store (rank 0's), as this rank reaches it, where the store knows
  // it; "" otherwise (torch's c10d store). A join through the store binds braid's TCP listener
  // to the interface of the route to it, as MASTER_ADDR does (braid::mpi::from_mpi's store).
  virtual std::string host() const { return {}; }
};

}  // namespace braid
