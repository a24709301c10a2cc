// Building the TCP mesh. Each rank listens, publishes "host:port" in the store, then connects to
// every lower rank on one thread while accepting every higher rank on this one. The handshake
// is a challenge-response (job_token.h): a connector must answer its acceptor's challenge, so
// it cannot send its hellos and come back later. With both sides running at once every
// acceptor is serving from the start and every connector answers at once, so no rank waits on a
// chain of others: rank 0 only accepts, the highest rank only connects. After admission both
// ends say whether they run TLS (one byte each) and, if they do, run its handshake
// (tls_session.h) before the connection carries any frame. With BRAID_TCP_STREAMS=S a pair of
// ranks opens S such connections, each through the whole handshake, and each tells its stream
// index right after admission (tcp_stream_hello.h).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <sys/socket.h>

#include "braid/base/log.h"
#include "braid/base/start_thread.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/socket.h"
#include "braid/bootstrap/key_value_store.h"
#include "braid/transport/tcp/stripe_plan.h"
#include "braid/transport/tcp/tcp_peer.h"
#include "braid/transport/tcp/tcp_stream_hello.h"
#include "braid/transport/tcp/tcp_transport.h"
#include "braid/transport/tcp/tls_session.h"

namespace braid::tcp {

namespace {

std::string address_key(int rank) { return fmt::format("tcp/addr/{}", rank); }

std::pair<std::string, std::uint16_t> split_endpoint(const std::string& endpoint, int rank) {
  auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    throw Corrupt({.rank = rank, .op = "tcp.connect"}, fmt::format("malformed endpoint '{}' in the store", endpoint));
  }
  std::string host = endpoint.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = std::atoi(endpoint.c_str() + colon + 1);
  if (port <= 0 || port > 65535) {
    throw Corrupt({.rank = rank, .op = "tcp.connect"}, fmt::format("bad port in endpoint '{}'", endpoint));
  }
  return {host, static_cast<std::uint16_t>(port)};
}

// One admitted connection, before the transport owns it.
struct Connection {
  int peer = -1;
  int stream = 0;  // which of the pair's BRAID_TCP_STREAMS connections
  UniqueFd fd;
  std::unique_ptr<TlsSession> tls;  // BRAID_TLS=on
};

// Both ends say whether they run TLS before either starts it, so ranks that disagree about
// BRAID_TLS fail with a Mismatch naming both settings instead of reading each other's
// handshake as a garbled stream. Then the TLS handshake, if on.
std::unique_ptr<TlsSession> secure(int fd, TlsSession::Side side, const TcpOptions& options, int peer,
                                   Deadline deadline, const ErrorContext& ctx) {
  const char mine = options.tls ? 'T' : 'P';
  char theirs = 0;
  net::write_all(fd, &mine, 1, deadline, ctx);
  net::read_all(fd, &theirs, 1, deadline, ctx);
  if (theirs != mine) {
    auto setting = [](char mode) { return mode == 'T' ? "on" : "off"; };
    throw Mismatch(ctx, fmt::format("rank {} runs with BRAID_TLS={} but rank {} with BRAID_TLS={}: every rank must "
                                    "set the same",
                                    options.rank, setting(mine), peer, setting(theirs)));
  }
  if (!options.tls) return nullptr;
  return TlsSession::handshake(fd, side, options.token, deadline, ctx);
}

// How long an accepted connection may take to send its hello. A peer rank sends it as soon as
// it connects; a stray connection that sends nothing must not hold up the mesh until the
// job's timeout (connections are accepted one at a time).
constexpr Seconds kHelloTimeout{10.0};

// How often the accepting side looks whether the connecting side has given up.
constexpr Seconds kAbandonPoll{0.1};

// Accepts until every rank in `expected` has connected with the right token, or `abandon` is
// set (the connecting side failed: its error is the one to report, at once). Connections that
// fail the handshake (a stray client, a wrong token, no hello in time) are logged and dropped;
// setup goes on.
// A peer that was admitted but disagrees about TLS fails the setup (Mismatch) on both sides.
// Each rank in `higher` connects `streams` times; a stream index seen twice is a duplicate.
std::vector<Connection> accept_peers(int listen_fd, const std::set<int>& higher, int streams, const TcpOptions& options,
                                     Deadline deadline, const std::atomic<bool>& abandon) {
  std::vector<Connection> accepted;
  std::map<int, int> expected;  // rank -> connections still to come
  for (int rank : higher) expected[rank] = streams;
  std::set<std::pair<int, int>> seen;  // (rank, stream) admitted
  ErrorContext ctx{.rank = options.rank, .op = "tcp.accept"};
  while (!expected.empty() && !abandon.load()) {
    UniqueFd fd;
    try {
      fd = net::accept_connection(listen_fd, Deadline::after(deadline.remaining(kAbandonPoll)), ctx);
    } catch (const Timeout&) {
      if (deadline.expired()) throw;
      continue;
    }
    int rank = -1;
    try {
      Deadline hello_deadline = Deadline::after(deadline.remaining(kHelloTimeout));
      net::Hello hello = net::server_handshake(fd.get(), options.token, net::Role::kTransportPeer, hello_deadline, ctx);
      if (!expected.contains(hello.rank)) {
        log::warn("rank {}: dropped a transport connection claiming rank {} (not expected or duplicate)", options.rank,
                  hello.rank);
        continue;
      }
      rank = hello.rank;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kTimeout && deadline.expired()) throw;
      log::warn("rank {}: refused a transport connection: {}", options.rank, e.detail());
      continue;
    }
    // Admitted: from here a failure is the job's (a TLS or stream-count disagreement, a peer
    // gone), not a stray's.
    ErrorContext peer_ctx{.rank = options.rank, .peer = rank, .op = "tcp.accept"};
    const int stream = receive_stream_hello(fd.get(), streams, options.rank, rank, deadline, peer_ctx);
    if (!seen.emplace(rank, stream).second) {
      throw Corrupt(peer_ctx, fmt::format("rank {} opened TCP stream {} twice", rank, stream));
    }
    if (--expected[rank] == 0) expected.erase(rank);
    std::unique_ptr<TlsSession> tls = secure(fd.get(), TlsSession::Side::kAcceptor, options, rank, deadline, peer_ctx);
    accepted.push_back({rank, stream, std::move(fd), std::move(tls)});
  }
  return accepted;
}

// Connects `streams` times to every lower rank in `lower` (ascending) and completes each
// handshake.
std::vector<Connection> connect_peers(const std::vector<int>& lower, int streams, const TcpOptions& options,
                                      KeyValueStore& store, Deadline deadline) {
  std::vector<Connection> connected;
  for (int peer : lower) {
    ErrorContext ctx{.rank = options.rank, .peer = peer, .op = "tcp.connect"};
    auto [host, port] = split_endpoint(store.get(address_key(peer), deadline), options.rank);
    for (int stream = 0; stream < streams; ++stream) {
      UniqueFd fd = net::tcp_connect(host, port, deadline, ctx);
      net::Hello hello{.role = net::Role::kTransportPeer, .rank = options.rank, .token = options.token};
      net::client_handshake(fd.get(), hello, deadline, ctx);
      send_stream_hello(fd.get(), stream, streams, options.rank, peer, deadline, ctx);
      std::unique_ptr<TlsSession> tls = secure(fd.get(), TlsSession::Side::kConnector, options, peer, deadline, ctx);
      connected.push_back({peer, stream, std::move(fd), std::move(tls)});
    }
  }
  return connected;
}

// BRAID_TCP_BUFFER_BYTES: fixed socket buffers instead of the kernel's autotuning (0 keeps it).
void set_buffer_bytes(int fd, std::size_t bytes, const ErrorContext& ctx) {
  if (bytes == 0) return;
  const int value = static_cast<int>(std::min<std::size_t>(bytes, std::numeric_limits<int>::max() / 2));
  for (int option : {SO_SNDBUF, SO_RCVBUF}) {
    if (::setsockopt(fd, SOL_SOCKET, option, &value, sizeof value) != 0) {
      throw_system_error(ctx, fmt::format("setting {} to {} bytes (BRAID_TCP_BUFFER_BYTES)",
                                          option == SO_SNDBUF ? "SO_SNDBUF" : "SO_RCVBUF", value),
                         errno);
    }
  }
}

// Under TLS every connection would need its own session, and the stripes their own records:
// striping is off there (one connection per pair), said once.
int effective_streams(const TcpOptions& options) {
  const int streams = std::clamp(options.streams, 1, kMaxStreams);
  if (!options.tls || streams == 1) return streams;
  if (options.rank == 0) {
    log::info("BRAID_TCP_STREAMS={} ignored: BRAID_TLS=on runs one connection per pair of ranks", streams);
  }
  return 1;
}

}  // namespace

std::unique_ptr<TcpTransport> TcpTransport::connect(const TcpOptions& options, KeyValueStore& store,
                                                    Deadline deadline) {
  std::unique_ptr<TcpTransport> t(new TcpTransport(options));
  t->lost_after_ = peer_timeout();
  net::require_token_beyond_loopback(options.bind_addr, options.token, "the TCP transport",
                                     {.rank = options.rank, .op = "tcp.listen"});
  UniqueFd listener = net::tcp_listen(options.bind_addr, 0);
  std::string endpoint = net::format_endpoint(options.advertise_addr, net::local_port(listener.get()));
  store.set(address_key(options.rank), endpoint, deadline);

  std::vector<int> lower;
  std::set<int> higher;
  for (int peer : options.peers) {
    if (peer < options.rank) lower.push_back(peer);
    if (peer > options.rank) higher.insert(peer);
  }
  std::sort(lower.begin(), lower.end());
  // The connecting side runs on its own thread; its error, if any, is rethrown here after the
  // accepting side is done (both are bounded by `deadline`).
  std::vector<Connection> connections;
  std::exception_ptr connect_error;
  std::atomic<bool> connect_failed{false};
  const int streams = effective_streams(options);
  std::thread connector = start_thread({.rank = options.rank, .op = "tcp.connect"}, [&] {
    try {
      connections = connect_peers(lower, streams, options, store, deadline);
    } catch (...) {
      connect_error = std::current_exception();
      connect_failed = true;
    }
  });
  std::vector<Connection> accepted;
  try {
    accepted = accept_peers(listener.get(), higher, streams, options, deadline, connect_failed);
  } catch (...) {
    connector.join();
    throw;
  }
  connector.join();
  if (connect_error) std::rethrow_exception(connect_error);
  for (auto& peer : accepted) connections.push_back(std::move(peer));

  // By peer, each peer's stream 0 first: it becomes the Peer, the others its stripe streams.
  std::sort(connections.begin(), connections.end(), [](const auto& a, const auto& b) {
    return std::pair(a.peer, a.stream) < std::pair(b.peer, b.stream);
  });
  int max_rank = connections.empty() ? 0 : connections.back().peer;
  t->peer_index_.assign(static_cast<std::size_t>(std::max(max_rank, options.rank)) + 1, -1);
  for (Connection& c : connections) {
    net::set_nonblocking(c.fd.get());
    net::set_nodelay(c.fd.get());
    set_buffer_bytes(c.fd.get(), options.buffer_bytes, {.rank = options.rank, .peer = c.peer, .op = "tcp.connect"});
    if (c.stream > 0) {
      t->peers_.back()->stripes.emplace_back(std::move(c.fd));
      continue;
    }
    if (c.tls) log::debug("rank {}: TLS to rank {}: {}", options.rank, c.peer, c.tls->describe());
    t->peer_index_[static_cast<std::size_t>(c.peer)] = static_cast<int>(t->peers_.size());
    t->peers_.push_back(std::make_unique<Peer>(options.rank, c.peer, std::move(c.fd), std::move(c.tls)));
  }
  return t;
}

}  // namespace braid::tcp
