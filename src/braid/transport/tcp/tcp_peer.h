// The state of one TCP connection inside TcpTransport (private to the tcp/ folder).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "braid/base/unique_fd.h"
#include "braid/bootstrap/tcp_liveness.h"
#include "braid/transport/matcher.h"
#include "braid/transport/message_header.h"
#include "braid/transport/tcp/tcp_stripe_stream.h"
#include "braid/transport/tcp/tcp_transport.h"
#include "braid/transport/tcp/tls_session.h"

namespace braid::tcp {

// One syscall moves at most this much, so a huge message cannot starve the other peers.
inline constexpr std::size_t kMaxIo = std::size_t{1} << 26;
// A syscall's iovecs for a message's payload: the pieces of a gather send or scatter receive
// (message_buffer.h) beyond this go in the next call.
inline constexpr std::size_t kMaxPayloadIov = 64;

// Non-blocking sendmsg / recvmsg of `count` iovecs on a connection, as the syscalls return.
ssize_t send_iov(int fd, const iovec* iov, int count);
ssize_t receive_iov(int fd, iovec* iov, int count);

struct TcpTransport::Peer {
  enum class State { kOpen, kClosed, kLost };

  int rank = -1;
  UniqueFd fd;
  std::unique_ptr<TlsSession> tls;  // BRAID_TLS=on: every byte goes through it
  std::string tls_stage;            // TLS: a header with its payload's first bytes (send_parts)
  Matcher matcher;
  State state = State::kOpen;
  bool bye_received = false;
  std::string lost_reason;
  net::PeerSilence silence;  // tells a peer behind a cut link from a slow one
  // Streams 1.. of a striped pair (BRAID_TCP_STREAMS > 1); this Peer's own fd is stream 0.
  std::vector<StripeStream> stripes;

  // Outgoing: control frames go out between data frames, data frames in post order.
  std::string control;
  std::deque<RequestPtr> sends;
  WireHeader out_header{};
  std::size_t out_header_sent = 0;
  std::uint64_t out_payload_bytes = 0;  // of the active frame on this stream: stripe 0 if striped
  std::uint64_t out_payload_sent = 0;
  bool out_active = false;

  // Incoming: the stream is read into one target at a time. Between frames that is the next
  // header; after a data frame's header, its payload (straight into the matched receive's
  // buffer); after an abort frame's header, the abort text. Each target's fields below are
  // meaningful only while it is being read.
  enum class ReadTarget { kHeader, kDataPayload, kAbortText };
  ReadTarget reading = ReadTarget::kHeader;
  WireHeader in_header{};
  std::size_t in_header_got = 0;
  std::optional<IncomingMessage> incoming;  // kDataPayload (of a striped message: stripe 0)
  std::shared_ptr<StripedIncoming> striped_in;  // kDataPayload of a striped message
  std::uint8_t abort_kind = 0;              // kAbortText: the ErrorKind as sent, checked at the end
  std::string abort_text;                   // kAbortText: sized to the frame's byte count
  std::size_t abort_text_got = 0;

  Peer(int self, int peer_rank, UniqueFd socket, std::unique_ptr<TlsSession> session)
      : rank(peer_rank), fd(std::move(socket)), tls(std::move(session)), matcher(self, peer_rank) {}

  int streams() const { return 1 + static_cast<int>(stripes.size()); }
  bool pending() const {
    return !sends.empty() || incoming.has_value() || matcher.has_posted_recvs() ||
           std::any_of(stripes.begin(), stripes.end(), [](const StripeStream& s) { return s.pending(); });
  }
  bool wants_to_write() const {
    return out_active || !sends.empty() || !control.empty() || (tls && tls->buffered() > 0);
  }
  const Request* oldest_request() const {
    if (incoming && incoming->recv) return incoming->recv.get();
    if (!sends.empty()) return sends.front().get();
    return nullptr;
  }
};

}  // namespace braid::tcp
