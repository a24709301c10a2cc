// The rendezvous store: a small TCP key-value service on rank 0 through which ranks publish
// their transport addresses and host ids, count arrivals and wait for each other before any
// rank-to-rank connection exists (the role of c10d's TCPStore under torchrun).
//
// Rank 0 runs a StoreServer and, like every other rank, talks to it through a StoreClient.
// Every connection passes the job-token handshake (job_token.h) before a request is read. The
// wire format is in store_protocol.h; limits: keys 4 KiB, values 64 MiB.
//
// Semantics (linearised by the single server thread):
//   set(k, v)       stores v, replacing any value; wakes waiters on k.
//   get(k)          the value of k, waiting until k exists. The server parks the request; the
//                   client enforces the deadline.
//   wait(keys)      returns once every key exists.
//   add(k, delta)   k as a decimal int64 counter (missing = 0) plus delta; returns the new
//                   value, stored as its decimal text (get(k) returns "5"). Wakes waiters.
//   check(keys)     whether every key exists, without waiting.
//   delete_key(k)   removes k; returns whether it existed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/base/unique_fd.h"
#include "braid/bootstrap/key_value_store.h"
#include "braid/bootstrap/store_protocol.h"

namespace braid {

// Serves the store from one background thread: a poll() loop over the listening socket, every
// client (non-blocking, with its own read and write buffers, so a slow or stalled client never
// holds up the others) and an eventfd that stops it. A client that breaks the protocol (bad
// hello, wrong token, an over-limit or malformed frame) is logged and dropped; the server keeps
// serving everyone else. A client that sends no hello within BRAID_TIMEOUT is dropped too.
//
// Thread safety: construct and destroy from one thread; port() and address() from any thread.
// The keys and connections belong to the server thread alone; callers never touch them.
class StoreServer {
 public:
  // Listens on bind_addr:port ("" = 127.0.0.1, port 0 = ephemeral) and starts serving clients
  // that present `token`. Throws SystemError when the port cannot be bound (e.g. in use).
  StoreServer(const std::string& bind_addr, std::uint16_t port, std::string token);
  // Stops the thread and closes every connection: blocked clients see PeerLost at once.
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::uint16_t port() const { return port_; }
  // "ip:port" actually bound.
  const std::string& address() const { return address_; }

 private:
  class Loop;
  std::uint16_t port_ = 0;
  std::string address_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

// One connection to the store. Every call takes a deadline (BRAID_TIMEOUT from now when not
// given) and throws:
//   Timeout          the deadline passed; the message names the keys and the store address.
//                    The connection is re-established on the next call (the server still owes
//                    the abandoned request an answer, which must not be read as the next one).
//   PeerLost         the store went away (rank 0 exited); every later call throws it again.
//   InvalidArgument  a key or value over its limit, or add() on a key that is not a counter.
//
// Thread safety: not thread-safe. Use a StoreClient from one thread at a time; threads that
// need the store concurrently each open their own client (the server handles any number).
class StoreClient final : public KeyValueStore {
 public:
  // Connects (retrying until connect_deadline while rank 0 is still starting its server) and
  // proves `token`. `rank` is sent in the hello and named in errors.
  StoreClient(const std::string& host, std::uint16_t port, std::string token, int rank,
              Deadline connect_deadline = Deadline::from_env());

  void set(const std::string& key, std::string_view value, Deadline deadline = Deadline::from_env()) override;
  std::string get(const std::string& key, Deadline deadline = Deadline::from_env()) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline = Deadline::from_env()) override;
  std::int64_t add(const std::string& key, std::int64_t delta, Deadline deadline = Deadline::from_env());
  bool check(const std::vector<std::string>& keys, Deadline deadline = Deadline::from_env());
  bool delete_key(const std::string& key, Deadline deadline = Deadline::from_env());

  // "host:port" of the store, as given.
  const std::string& address() const { return address_; }
  std::string host() const override { return host_; }
  int rank() const { return rank_; }

 private:
  void connect(Deadline deadline);
  store_wire::Response call(const store_wire::Request& request, Deadline deadline);
  store_wire::Response read_response(Deadline deadline, const ErrorContext& ctx);

  std::string host_;
  std::uint16_t port_;
  std::string token_;
  int rank_;
  std::string address_;
  UniqueFd fd_;                      // invalid after a timeout, until the next call reconnects
  std::optional<std::string> lost_;  // set once the store is gone: later calls fail fast
};

}  // namespace braid
