// Noticing a TCP peer that went silent without closing: a host that went down, a link that was
// cut or black-holed. Such a peer sends no FIN and no RST, and Linux left alone reports it only
// after 2 hours (keepalive) or ~15 minutes (retransmissions). See Note [Lost peers] in the .cc.
//
// Thread safety: free functions over fds, and a PeerSilence per connection used by the thread
// that owns the connection.
#pragma once

#include <cstdint>
#include <optional>

#include "braid/base/clock.h"

namespace braid::net {

// Turns on keepalive probes so that an idle connection whose peer stops answering fails with
// ETIMEDOUT after about `lost_after` (0: leave the kernel's defaults). tcp_connect and
// accept_connection apply it with BRAID_PEER_TIMEOUT to every connection braid makes.
void watch_peer(int fd, Seconds lost_after);

// The part keepalive cannot see: a connection with data (or zero-window probes) in flight,
// which the kernel retransmits for minutes. Call check() now and then (about once a second).
class PeerSilence {
 public:
  // How long the kernel has been retrying without the peer acknowledging anything, once that
  // reaches `lost_after`: the connection is as good as lost. nullopt while the peer answers.
  std::optional<Seconds> check(int fd, Seconds lost_after);

 private:
  std::uint64_t bytes_acked_ = 0;
  std::optional<Clock::time_point> retrying_since_;  // first check that saw a retransmission
};

}  // namespace braid::net
