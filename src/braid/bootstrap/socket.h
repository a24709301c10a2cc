// TCP plumbing shared by the rendezvous store and the tcp transport: listening, connecting
// with retry, and exact-length reads and writes that honour a Deadline.
//
// Conventions (all functions):
//   - Every fd braid creates is close-on-exec, so launchers' children do not inherit it.
//   - Listening sockets are non-blocking (accept through accept_connection or poll); connected
//     sockets come back blocking, with TCP_NODELAY (bootstrap and transport messages are small
//     request/response exchanges where Nagle's delay would add 40 ms per round trip).
//   - read_all / write_all work on blocking and non-blocking sockets alike: they never block in
//     the kernel (MSG_DONTWAIT) and wait in poll() instead, so the deadline is always honoured.
//   - SIGPIPE is never raised (MSG_NOSIGNAL); a vanished peer is braid::PeerLost.
//   - Addresses are numeric "host:port" ("[::1]:port" for IPv6) in every message.
//
// Thread safety: these are free functions over fds; concurrent use of one fd is the caller's
// business (one reader and one writer at a time is what TCP supports).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/base/unique_fd.h"

namespace braid::net {

// Listens on bind_addr:port (port 0: the kernel picks one; read it back with local_port).
// bind_addr is a numeric address or a host name; "" means loopback (127.0.0.1), since braid
// listens on loopback unless a non-local address is configured. SO_REUSEADDR is set so a
// restarted job can rebind a port still in TIME_WAIT. Throws SystemError naming the address.
UniqueFd tcp_listen(const std::string& bind_addr, std::uint16_t port, int backlog = 128);

// The bound port / numeric address of a socket (getsockname).
std::uint16_t local_port(int fd);
std::string local_address(int fd);
// "ip:port" of the connected peer, or "<unknown peer>" when the socket is not connected.
std::string peer_address(int fd);
// "host:port", bracketing IPv6 literals.
std::string format_endpoint(const std::string& host, std::uint16_t port);

// Connects to host:port, retrying while nobody listens yet (ECONNREFUSED, ETIMEDOUT, resets and
// unreachable routes, as happen while the other rank is still starting) with a backoff from
// 10 ms up to 200 ms, until `deadline`; then throws Timeout naming host:port and the last error.
// Names are resolved with getaddrinfo on every attempt (DNS may lag a node's start); a name that
// cannot exist (EAI_NONAME) throws InvalidArgument at once. Each address gets at most 10 s per
// attempt, so one black-holed address of several does not use up the whole deadline. The
// connection comes back with watch_peer(BRAID_PEER_TIMEOUT) applied (tcp_liveness.h).
UniqueFd tcp_connect(const std::string& host, std::uint16_t port, Deadline deadline, const ErrorContext& ctx);

// Waits (poll) for one connection on a listening socket and accepts it (with watch_peer).
// Throws Timeout.
UniqueFd accept_connection(int listen_fd, Deadline deadline, const ErrorContext& ctx);

void set_nonblocking(int fd, bool on = true);
void set_nodelay(int fd);

// Sends / receives exactly n bytes. End of stream, ECONNRESET or EPIPE throw PeerLost
// ("connection closed by peer"); the deadline throws Timeout; other errors SystemError.
// A call that throws has moved an unknown number of bytes: the stream is out of step after it.
void write_all(int fd, const void* data, std::size_t n, Deadline deadline, const ErrorContext& ctx);
void read_all(int fd, void* data, std::size_t n, Deadline deadline, const ErrorContext& ctx);

// Waits until fd is readable (POLLIN) or writable (POLLOUT) or has an error/hangup. Returns
// false when the deadline passed first. EINTR is retried.
bool wait_ready(int fd, short events, Deadline deadline);

// 127.0.0.0/8, ::1 (also bracketed and v4-mapped ::ffff:127.x.y.z) and "localhost".
bool is_loopback_address(const std::string& host);
// Whether a listener bound to `host` (a literal or a name) is reachable from this host only:
// a literal by is_loopback_address, a name when every address it resolves to is loopback (a
// cluster node's own name that /etc/hosts maps to 127.0.x.x). A name that does not resolve is
// not loopback.
bool binds_loopback_only(const std::string& host);

// This machine's host name (gethostname).
std::string hostname();

// The local address this host would use to reach host:port (the source address of the route,
// found by connecting a UDP socket, which sends nothing). How a rank picks the interface that
// other hosts can reach when the master is not on loopback.
std::string route_source_address(const std::string& host, std::uint16_t port);

}  // namespace braid::net
