// One extra connection of a striped peer pair (streams 1..BRAID_TCP_STREAMS-1; stream 0 is
// TcpTransport::Peer itself). Private to the tcp/ folder.
//
// An extra stream carries bare payload bytes, no headers: stripe i of every striped message,
// in the order the messages were posted (sender) and matched (receiver). Both ends derive the
// same stripes from the message's size (stripe_plan.h), and stream 0 carries every header, so
// matching, the header's CRC and the envelope checks stay where they were. The receiver
// learns where stream i's next bytes go when stream 0 reads the message's header; until then
// it leaves stream i unread and TCP's flow control holds the sender back. Stream 0 never waits
// for an extra stream, so the streams cannot deadlock one another. An extra stream is read
// only while a stripe is expected on it, so its EOF is seen then: a peer that closes between
// messages is noticed on stream 0 (bye or EOF), one that dies mid-stripe on the stream.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "braid/base/unique_fd.h"
#include "braid/bootstrap/tcp_liveness.h"
#include "braid/transport/matcher.h"
#include "braid/transport/request.h"

namespace braid::tcp {

// A striped message being received: the matcher's view of it, complete once every stripe is.
struct StripedIncoming {
  IncomingMessage message;
  std::uint64_t bytes_left = 0;  // over all stripes
};

// One stripe of a message to send.
struct StripeOut {
  RequestPtr send;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t sent = 0;
};

// One stripe of a message to receive.
struct StripeIn {
  std::shared_ptr<StripedIncoming> target;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t got = 0;
};

struct StripeStream {
  UniqueFd fd;
  std::deque<StripeOut> out;
  std::deque<StripeIn> in;
  net::PeerSilence silence;  // as Peer::silence

  explicit StripeStream(UniqueFd socket) : fd(std::move(socket)) {}
  bool pending() const { return !out.empty() || !in.empty(); }
};

}  // namespace braid::tcp
