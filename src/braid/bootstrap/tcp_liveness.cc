// Note [Lost peers]
// A live peer's kernel acknowledges whatever its process is doing (computing, saving a
// checkpoint, stopped in a debugger), so silence at the TCP level, not at the application
// level, is what tells a lost peer from a slow one:
//   - idle connection: keepalive probes after a third of the budget without traffic, then one
//     a second; the kernel fails the socket with ETIMEDOUT when the budget is used up;
//   - data in flight: TCP_INFO's tcpi_retransmits counts retransmission timeouts since the
//     peer last acknowledged new data (bytes_acked); two or more, for the whole budget, with
//     bytes_acked standing still, is a peer that is gone; likewise unanswered zero-window
//     probes (tcpi_probes) with no ACK at all for the budget.
// TCP_USER_TIMEOUT would be simpler and is not used: since Linux 5.11 it also aborts a
// connection whose live peer merely keeps its receive window closed, as a straggler rank does
// while a large message waits for it, turning a slow rank into a false PeerLost.
// (linux/tcp.h, not glibc's netinet/tcp.h, because only the kernel's tcp_info has bytes_acked.)
#include "braid/bootstrap/tcp_liveness.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <utility>

#include "braid/base/error.h"

namespace braid::net {

void watch_peer(int fd, Seconds lost_after) {
  if (lost_after.count() <= 0) return;
  const int budget = std::max(2, static_cast<int>(std::ceil(lost_after.count())));
  const int idle = std::max(1, budget / 3);
  const int interval = 1;
  const int count = std::max(1, budget - idle);
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0) {
    throw_system_error({}, "setsockopt(SO_KEEPALIVE)", errno);
  }
  const std::pair<int, int> options[] = {{TCP_KEEPIDLE, idle}, {TCP_KEEPINTVL, interval}, {TCP_KEEPCNT, count}};
  for (const auto& [name, value] : options) {
    if (::setsockopt(fd, IPPROTO_TCP, name, &value, sizeof value) != 0) throw_system_error({}, "setsockopt(TCP_KEEP*)", errno);
  }
}

std::optional<Seconds> PeerSilence::check(int fd, Seconds lost_after) {
  if (lost_after.count() <= 0) return std::nullopt;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  const auto now = Clock::now();
  if (info.tcpi_bytes_acked != bytes_acked_ || info.tcpi_retransmits == 0) {
    bytes_acked_ = info.tcpi_bytes_acked;
    retrying_since_.reset();
  }
  if (info.tcpi_retransmits > 0 && !retrying_since_) retrying_since_ = now;
  // One retransmission is ordinary loss; the kernel backs off (0.2, 0.4, 0.8 s ...), so two or
  // more for the whole budget means nothing got through in all that time.
  if (info.tcpi_retransmits >= 2 && now - *retrying_since_ >= lost_after) return Seconds(now - *retrying_since_);
  const Seconds unanswered(info.tcpi_last_ack_recv / 1000.0);
  if (info.tcpi_probes >= 2 && unanswered >= lost_after) return unanswered;
  return std::nullopt;
}

}  // namespace braid::net
