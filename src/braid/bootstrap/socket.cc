#include "braid/bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "braid/bootstrap/tcp_liveness.h"

namespace braid::net {

namespace {

// Retry pacing for tcp_connect: fast enough that a rank starting a few ms after its peer is
// not delayed noticeably, slow enough that N ranks hammering a not-yet-listening rank 0 cost
// nothing (a refused loopback connect is a few microseconds of kernel work).
constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(200);
// One address gets at most this long per attempt, so a black-holed address (SYNs dropped, the
// kernel would retry for ~2 minutes) does not starve the other addresses a name resolves to.
constexpr Seconds kConnectAttemptTimeout{10.0};
// Longest single poll() sleep, so waits with Deadline::never() still wake now and then.
constexpr int kPollSliceMs = 1000;

double seconds_since(Clock::time_point start) { return Seconds(Clock::now() - start).count(); }

std::string strip_brackets(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
  return host;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* p) const { freeaddrinfo(p); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo for a TCP endpoint; returns its error code (0 on success).
int resolve(const std::string& host, std::uint16_t port, bool passive, AddrInfoPtr& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result);
  out.reset(result);
  return rc;
}

// "ip:port" of a socket address, or "" when it cannot be printed.
std::string endpoint_of(const sockaddr_storage& ss, socklen_t len) {
  char host[NI_MAXHOST];
  char service[NI_MAXSERV];
  int rc = ::getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof host, service, sizeof service,
                         NI_NUMERICHOST | NI_NUMERICSERV);
  if (rc != 0) return {};
  return format_endpoint(host, static_cast<std::uint16_t>(std::atoi(service)));
}

std::string sock_endpoint(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  int rc = peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len);
  return rc == 0 ? endpoint_of(ss, len) : std::string();
}

// Errors that mean "nobody is listening there yet" or "the route is not up yet": worth
// retrying while the other side is still starting.
bool is_retryable_connect_error(int e) {
  switch (e) {
    case ECONNREFUSED: case ETIMEDOUT: case ECONNRESET: case ECONNABORTED:
    case EHOSTUNREACH: case ENETUNREACH: case EAGAIN:
      return true;
    default:
      return false;
  }
}

bool is_peer_gone_error(int e) {
  return e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ECONNABORTED || e == ETIMEDOUT;
}

// Errors accept(2) reports for a connection that died in the backlog; the listener is fine.
bool is_transient_accept_error(int e) {
  switch (e) {
    case EAGAIN: case EINTR: case ECONNABORTED: case EPROTO: case ENETDOWN: case ENOPROTOOPT:
    case EHOSTDOWN: case ENONET: case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

// Connecting a loopback socket to a port in the ephemeral range with no listener can
// "succeed" by TCP simultaneous open against itself (source port == destination port).
bool is_self_connection(int fd) {
  std::string local = sock_endpoint(fd, false);
  return !local.empty() && local == sock_endpoint(fd, true);
}

// One non-blocking connect attempt to one address, bounded by the deadline. Returns an
// invalid fd and sets *err (an errno value) on failure.
UniqueFd try_connect(const addrinfo& ai, Deadline deadline, int* err) {
  UniqueFd fd(::socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai.ai_protocol));
  if (!fd.valid()) {
    *err = errno;
    return {};
  }
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      *err = errno;
      return {};
    }
    if (!wait_ready(fd.get(), POLLOUT, deadline)) {
      *err = ETIMEDOUT;
      return {};
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      *err = so_error;
      return {};
    }
  }
  if (is_self_connection(fd.get())) {
    *err = ECONNREFUSED;
    return {};
  }
  return fd;
}

}  // namespace

std::string format_endpoint(const std::string& host, std::uint16_t port) {
  if (host.find(':') != std::string::npos && host.front() != '[') return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

UniqueFd tcp_listen(const std::string& bind_addr, std::uint16_t port, int backlog) {
  const std::string host = bind_addr.empty() ? std::string("127.0.0.1") : strip_brackets(bind_addr);
  const std::string where = format_endpoint(host, port);
  const ErrorContext ctx{.op = "listen"};
  AddrInfoPtr addrs;
  if (int rc = resolve(host, port, true, addrs); rc != 0) {
    throw InvalidArgument(ctx, fmt::format("cannot listen on {}: {}", where, ::gai_strerror(rc)));
  }
  int last_errno = EADDRNOTAVAIL;
  const char* failed_step = "socket";
  for (const addrinfo* ai = addrs.get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd.valid()) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last_errno = errno;
      failed_step = "bind";
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last_errno = errno;
      failed_step = "listen";
      continue;
    }
    return fd;
  }
  throw_system_error(ctx, fmt::format("cannot listen on {} ({} failed)", where, failed_step), last_errno);
}

std::uint16_t local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) throw_system_error({}, "getsockname", errno);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  throw InvalidArgument({}, fmt::format("fd {} is not an IP socket", fd));
}

std::string local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) throw_system_error({}, "getsockname", errno);
  char host[NI_MAXHOST];
  int rc = ::getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  if (rc != 0) throw SystemError({}, fmt::format("getnameinfo: {}", ::gai_strerror(rc)));
  return host;
}

std::string peer_address(int fd) {
  std::string peer = sock_endpoint(fd, true);
  return peer.empty() ? std::string("<unknown peer>") : peer;
}

UniqueFd tcp_connect(const std::string& host_in, std::uint16_t port, Deadline deadline, const ErrorContext& ctx) {
  const std::string host = strip_brackets(host_in);
  const std::string where = format_endpoint(host, port);
  if (host.empty() || port == 0) throw InvalidArgument(ctx, fmt::format("cannot connect to '{}': no host or port", where));
  const auto start = Clock::now();
  auto backoff = std::chrono::duration_cast<Clock::duration>(kFirstBackoff);
  std::string last_error = "no attempt finished";
  for (;;) {
    AddrInfoPtr addrs;
    int rc = resolve(host, port, false, addrs);
    bool retry = false;
    if (rc == EAI_AGAIN) {
      last_error = ::gai_strerror(rc);
      retry = true;
    } else if (rc != 0) {
      throw InvalidArgument(ctx, fmt::format("cannot connect to {}: {}", where, ::gai_strerror(rc)));
    }
    int err = 0;
    for (const addrinfo* ai = addrs.get(); ai != nullptr; ai = ai->ai_next) {
      UniqueFd fd = try_connect(*ai, Deadline::after(deadline.remaining(kConnectAttemptTimeout)), &err);
      if (fd.valid()) {
        set_nonblocking(fd.get(), false);
        set_nodelay(fd.get());
        watch_peer(fd.get(), peer_timeout());
        return fd;
      }
      last_error = std::strerror(err);
      retry = retry || is_retryable_connect_error(err);
    }
    if (!retry) throw_system_error(ctx, fmt::format("cannot connect to {}", where), err);
    if (deadline.expired()) {
      throw Timeout(ctx, fmt::format("timed out after {:.1f} s connecting to {} (last error: {})", seconds_since(start),
                                     where, last_error));
    }
    std::this_thread::sleep_for(std::min(backoff, std::chrono::duration_cast<Clock::duration>(
                                                      deadline.remaining(Seconds(kMaxBackoff)))));
    backoff = std::min(backoff * 2, std::chrono::duration_cast<Clock::duration>(kMaxBackoff));
  }
}

UniqueFd accept_connection(int listen_fd, Deadline deadline, const ErrorContext& ctx) {
  const auto start = Clock::now();
  for (;;) {
    // Poll first: on a blocking listener accept(2) would ignore the deadline.
    if (!wait_ready(listen_fd, POLLIN, deadline)) {
      throw Timeout(ctx, fmt::format("timed out after {:.1f} s waiting for a connection on {}", seconds_since(start),
                                     sock_endpoint(listen_fd, false)));
    }
    UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.valid()) {
      set_nodelay(fd.get());
      watch_peer(fd.get(), peer_timeout());
      return fd;
    }
    if (!is_transient_accept_error(errno)) {
      throw_system_error(ctx, fmt::format("accept on {}", sock_endpoint(listen_fd, false)), errno);
    }
  }
}

void set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) throw_system_error({}, "fcntl(F_GETFL)", errno);
  int wanted = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (wanted != flags && ::fcntl(fd, F_SETFL, wanted) != 0) throw_system_error({}, "fcntl(F_SETFL)", errno);
}

void set_nodelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) throw_system_error({}, "setsockopt(TCP_NODELAY)", errno);
}

bool wait_ready(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{.fd = fd, .events = events, .revents = 0};
    int rc = ::poll(&p, 1, deadline.remaining_ms(kPollSliceMs));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) throw_system_error({}, "poll", errno);
    if (rc == 0 && deadline.expired()) return false;
  }
}

void write_all(int fd, const void* data, std::size_t n, Deadline deadline, const ErrorContext& ctx) {
  const char* bytes = static_cast<const char*>(data);
  const auto start = Clock::now();
  std::size_t done = 0;
  while (done < n) {
    ssize_t k = ::send(fd, bytes + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      done += static_cast<std::size_t>(k);
      continue;
    }
    int e = k < 0 ? errno : EAGAIN;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      if (wait_ready(fd, POLLOUT, deadline)) continue;
      throw Timeout(ctx, fmt::format("timed out after {:.1f} s sending to {} ({} of {} bytes sent)", seconds_since(start),
                                     peer_address(fd), done, n));
    }
    if (is_peer_gone_error(e)) {
      throw PeerLost(ctx, fmt::format("connection closed by peer {} ({} of {} bytes sent: {})", peer_address(fd), done, n,
                                      std::strerror(e)));
    }
    throw_system_error(ctx, fmt::format("send to {}", peer_address(fd)), e);
  }
}

void read_all(int fd, void* data, std::size_t n, Deadline deadline, const ErrorContext& ctx) {
  char* bytes = static_cast<char*>(data);
  const auto start = Clock::now();
  std::size_t done = 0;
  while (done < n) {
    ssize_t k = ::recv(fd, bytes + done, n - done, MSG_DONTWAIT);
    if (k > 0) {
      done += static_cast<std::size_t>(k);
      continue;
    }
    if (k == 0) {
      throw PeerLost(ctx, fmt::format("connection closed by peer {} ({} of {} bytes received)", peer_address(fd), done, n));
    }
    int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      if (wait_ready(fd, POLLIN, deadline)) continue;
      throw Timeout(ctx, fmt::format("timed out after {:.1f} s receiving from {} ({} of {} bytes received)",
                                     seconds_since(start), peer_address(fd), done, n));
    }
    if (is_peer_gone_error(e)) {
      throw PeerLost(ctx, fmt::format("connection closed by peer {} ({} of {} bytes received: {})", peer_address(fd), done,
                                      n, std::strerror(e)));
    }
    throw_system_error(ctx, fmt::format("recv from {}", peer_address(fd)), e);
  }
}

bool is_loopback_address(const std::string& host_in) {
  const std::string host = strip_brackets(host_in);
  if (::strcasecmp(host.c_str(), "localhost") == 0) return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

bool binds_loopback_only(const std::string& host_in) {
  const std::string host = strip_brackets(host_in);
  if (is_loopback_address(host)) return true;
  in6_addr literal{};
  if (::inet_pton(AF_INET, host.c_str(), &literal) == 1 || ::inet_pton(AF_INET6, host.c_str(), &literal) == 1) {
    return false;  // a literal that is not loopback
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return false;
  bool loopback_only = true;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr = a->ai_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
                                               : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    ::inet_ntop(a->ai_family, addr, text, sizeof text);
    loopback_only = loopback_only && is_loopback_address(text);
  }
  ::freeaddrinfo(found);
  return loopback_only;
}

std::string hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) throw_system_error({}, "gethostname", errno);
  return name;
}

std::string route_source_address(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    throw InvalidArgument({.op = "route"}, fmt::format("cannot resolve '{}': {}", host, ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  UniqueFd fd(::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0) {
    throw_system_error({.op = "route"}, fmt::format("no route to {}", format_endpoint(host, port)), errno);
  }
  return local_address(fd.get());
}

}  // namespace braid::net
