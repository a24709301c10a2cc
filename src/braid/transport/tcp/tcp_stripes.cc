// TcpTransport's striping (tcp_transport.h, tcp_stripe_stream.h): the stripes of large
// messages on streams 1.. of a peer pair. Stream 0's frames are tcp_transport.cc's.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "braid/transport/tcp/stripe_plan.h"
#include "braid/transport/tcp/tcp_peer.h"
#include "braid/transport/tcp/tcp_transport.h"

namespace braid::tcp {

namespace {

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

// Queued at post time, so every extra stream sends its stripes in post order, the order
// stream 0 sends the headers in.
void TcpTransport::post_stripes(Peer& p, const RequestPtr& send) {
  const std::uint64_t bytes = send->envelope.bytes;
  const int count = stripe_count(bytes, p.streams());
  for (int i = 1; i < count; ++i) {
    StripeSpan span = stripe_span(bytes, count, i);
    p.stripes[static_cast<std::size_t>(i - 1)].out.push_back({.send = send, .offset = span.offset, .bytes = span.bytes});
  }
}

// Stream 0 has just matched a data header: if the message is striped, its stripes beyond the
// first are expected on the other streams, and stream 0 reads only the first.
void TcpTransport::receive_stripes(Peer& p) {
  IncomingMessage& m = *p.incoming;
  const int count = stripe_count(m.bytes, p.streams());
  if (count == 1) return;
  auto target = std::make_shared<StripedIncoming>(StripedIncoming{.message = m, .bytes_left = m.bytes});
  for (int i = 1; i < count; ++i) {
    StripeStream& s = p.stripes[static_cast<std::size_t>(i - 1)];
    StripeSpan span = stripe_span(m.bytes, count, i);
    s.in.push_back({.target = target, .offset = span.offset, .bytes = span.bytes});
  }
  m.bytes = stripe_span(m.bytes, count, 0).bytes;  // stripe 0 starts at the buffer's start
  p.striped_in = std::move(target);
}

void TcpTransport::stripe_arrived(Peer& p, std::uint64_t bytes, const std::shared_ptr<StripedIncoming>& target) {
  target->bytes_left -= bytes;
  if (target->message.recv) target->message.recv->transferred = target->message.bytes - target->bytes_left;
  if (target->bytes_left == 0) p.matcher.finish_message(target->message);
}

bool TcpTransport::progress_stripes(Peer& p) {
  bool moved = false;
  for (int i = 1; i < p.streams() && p.state == Peer::State::kOpen; ++i) {
    moved |= progress_stripe_recvs(p, i);
    moved |= progress_stripe_sends(p, i);
  }
  return moved;
}

bool TcpTransport::progress_stripe_sends(Peer& p, int stream) {
  StripeStream& s = p.stripes[static_cast<std::size_t>(stream - 1)];
  bool moved = false;
  while (!s.out.empty()) {
    StripeOut& out = s.out.front();
    const std::uint64_t left = out.bytes - out.sent;
    iovec iov[kMaxPayloadIov];
    const std::size_t count =
        out.send->buffer().iov(out.offset + out.sent, std::min<std::uint64_t>(left, kMaxIo), iov, kMaxPayloadIov);
    ssize_t n = send_iov(s.fd.get(), iov, static_cast<int>(count));
    if (n < 0) {
      if (would_block(errno)) break;
      if (errno == EINTR) continue;
      stripe_stream_failed(p, stream, errno);
      return moved;
    }
    moved = true;
    out.sent += static_cast<std::uint64_t>(n);
    out.send->transferred += static_cast<std::uint64_t>(n);
    if (out.sent == out.bytes) {
      RequestPtr done = std::move(out.send);
      s.out.pop_front();
      if (done->transferred == done->envelope.bytes) done->finish();
    }
  }
  return moved;
}

bool TcpTransport::progress_stripe_recvs(Peer& p, int stream) {
  StripeStream& s = p.stripes[static_cast<std::size_t>(stream - 1)];
  bool moved = false;
  while (!s.in.empty()) {
    StripeIn& in = s.in.front();
    const std::uint64_t left = in.bytes - in.got;
    iovec iov[kMaxPayloadIov];
    const std::size_t count =
        in.target->message.dst.iov(in.offset + in.got, std::min<std::uint64_t>(left, kMaxIo), iov, kMaxPayloadIov);
    ssize_t n = receive_iov(s.fd.get(), iov, static_cast<int>(count));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && would_block(errno)) break;
    if (n <= 0) {
      stripe_stream_failed(p, stream, n == 0 ? 0 : errno);
      return moved;
    }
    moved = true;
    in.got += static_cast<std::uint64_t>(n);
    if (in.got == in.bytes) {
      std::shared_ptr<StripedIncoming> target = std::move(in.target);
      const std::uint64_t bytes = in.bytes;
      s.in.pop_front();
      stripe_arrived(p, bytes, target);
    }
  }
  return moved;
}

// An extra stream closed or failed while a stripe needed it: the peer is lost, whatever its
// other streams say (a process that dies closes them all; one connection reset alone still
// leaves its stripes undeliverable).
void TcpTransport::stripe_stream_failed(Peer& p, int stream, int err) {
  p.state = Peer::State::kLost;
  p.lost_reason = err == 0 ? fmt::format("TCP stream {} of {} to rank {} closed unexpectedly (did the process die?)",
                                         stream, p.streams(), p.rank)
                           : fmt::format("TCP stream {} of {} to rank {} failed: {}", stream, p.streams(), p.rank,
                                         std::strerror(err));
  throw_lost(p, p.lost_reason);
}

}  // namespace braid::tcp
