#include "braid/transport/tcp/tcp_transport.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "braid/bootstrap/socket.h"
#include "braid/transport/tcp/stripe_plan.h"
#include "braid/transport/tcp/tcp_peer.h"

namespace braid::tcp {

namespace {

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

ssize_t send_iov(int fd, const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(count);
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t receive_iov(int fd, iovec* iov, int count) {
  if (count == 1) return ::recv(fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT);
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = static_cast<std::size_t>(count);
  return ::recvmsg(fd, &msg, MSG_DONTWAIT);
}

namespace {

// Reads and drops until the peer's EOF (or `deadline`), so that closing sends no RST.
void drain_to_eof(int fd, Deadline deadline) {
  char sink[4096];
  while (net::wait_ready(fd, POLLIN, deadline)) {
    ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && !would_block(errno) && errno != EINTR)) break;
  }
}

}  // namespace

TcpTransport::TcpTransport(TcpOptions options) : options_(std::move(options)) {}
TcpTransport::~TcpTransport() = default;

TcpTransport::Peer& TcpTransport::peer(int rank) {
  int index = rank >= 0 && static_cast<std::size_t>(rank) < peer_index_.size() ? peer_index_[static_cast<std::size_t>(rank)] : -1;
  if (index < 0) throw InvalidArgument({.rank = options_.rank, .peer = rank, .op = "tcp"}, "not a TCP peer");
  return *peers_[static_cast<std::size_t>(index)];
}

void TcpTransport::post_send(const RequestPtr& send) {
  Peer& p = peer(send->peer);
  if (p.state != Peer::State::kOpen) throw_lost(p, p.lost_reason);
  post_stripes(p, send);
  p.sends.push_back(send);
}

void TcpTransport::post_recv(const RequestPtr& recv) {
  Peer& p = peer(recv->peer);
  p.matcher.post_recv(recv);
  // A closed connection can still satisfy receives from what it delivered before closing.
  if (p.state != Peer::State::kOpen && !recv->complete.load(std::memory_order_acquire)) throw_lost(p, p.lost_reason);
}

void TcpTransport::post_any_source_recv(const RequestPtr& recv, int peer_rank) { peer(peer_rank).matcher.post_recv(recv); }

bool TcpTransport::progress() {
  bool moved = false;
  for (auto& p : peers_) {
    moved |= progress_recvs(*p);
    moved |= progress_sends(*p);
    moved |= progress_stripes(*p);
  }
  return moved;
}

bool TcpTransport::progress_sends(Peer& p) {
  if (p.state != Peer::State::kOpen) return false;
  bool moved = false;
  if (p.tls && p.tls->buffered() > 0) {  // records of an earlier write still to go out
    const std::size_t before = p.tls->buffered();
    if (int err = p.tls->flush(); err != 0) {
      on_eof(p, err);
      return false;
    }
    moved = p.tls->buffered() < before;
  }
  while (true) {
    if (!p.out_active) {
      if (!p.control.empty()) {
        const iovec control{p.control.data(), p.control.size()};
        ssize_t n = send_parts(p, &control, 1);
        if (n < 0) {
          if (would_block(errno)) break;
          if (errno == EINTR) continue;
          on_eof(p, errno);
          return moved;
        }
        p.control.erase(0, static_cast<std::size_t>(n));
        moved = true;
        continue;
      }
      if (p.sends.empty()) break;
      const Request& next = *p.sends.front();
      p.out_header = make_data_header(next.key, next.envelope);
      if (next.inject_corrupt_header) [[unlikely]] p.out_header.seq ^= 1;  // after the CRC: fault injection
      p.out_header_sent = 0;
      p.out_payload_bytes = stripe_span(next.envelope.bytes, stripe_count(next.envelope.bytes, p.streams()), 0).bytes;
      p.out_payload_sent = 0;
      p.out_active = true;
    }
    Request& r = *p.sends.front();
    iovec iov[1 + kMaxPayloadIov];
    int count = 0;
    if (p.out_header_sent < sizeof(WireHeader)) {
      iov[count++] = {reinterpret_cast<char*>(&p.out_header) + p.out_header_sent, sizeof(WireHeader) - p.out_header_sent};
    }
    std::uint64_t left = p.out_payload_bytes - p.out_payload_sent;
    count += static_cast<int>(
        r.buffer().iov(p.out_payload_sent, std::min<std::uint64_t>(left, kMaxIo), iov + count, kMaxPayloadIov));
    if (count > 0) {
      ssize_t n = send_parts(p, iov, count);
      if (n < 0) {
        if (would_block(errno)) break;
        if (errno == EINTR) continue;
        on_eof(p, errno);
        return moved;
      }
      moved = true;
      auto sent = static_cast<std::size_t>(n);
      std::size_t header_part = std::min(sent, sizeof(WireHeader) - p.out_header_sent);
      p.out_header_sent += header_part;
      p.out_payload_sent += sent - header_part;
      r.transferred += sent - header_part;
    }
    if (p.out_header_sent == sizeof(WireHeader) && p.out_payload_sent == p.out_payload_bytes) {
      // The other streams may still be sending their stripes: whichever ends last finishes it.
      RequestPtr done = std::move(p.sends.front());
      p.sends.pop_front();
      p.out_active = false;
      if (done->transferred == done->envelope.bytes) done->finish();
    }
  }
  return moved;
}

ssize_t TcpTransport::send_parts(Peer& p, const iovec* iov, int count) {
  if (p.tls) {
    if (count == 1 || iov[0].iov_len >= TlsSession::kRecordBytes) return p.tls->write(iov[0].iov_base, iov[0].iov_len);
    // A header (or a small piece) and what follows it in one record: a small message costs one
    // record (and one send) instead of two. The loop comes back for the rest of the payload.
    const std::size_t first = std::min(iov[1].iov_len, TlsSession::kRecordBytes - iov[0].iov_len);
    p.tls_stage.assign(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len);
    p.tls_stage.append(static_cast<const char*>(iov[1].iov_base), first);
    return p.tls->write(p.tls_stage.data(), p.tls_stage.size());
  }
  return send_iov(p.fd.get(), iov, count);
}

bool TcpTransport::progress_recvs(Peer& p) {
  if (p.state != Peer::State::kOpen) return false;
  bool moved = false;
  for (Received step; step.go_on;) {
    switch (p.reading) {
      case Peer::ReadTarget::kHeader: step = read_header(p); break;
      case Peer::ReadTarget::kDataPayload: step = read_data_payload(p); break;
      case Peer::ReadTarget::kAbortText: step = read_abort_text(p); break;
    }
    moved |= step.bytes > 0;
  }
  return moved;
}

// One recv() of at most `want` bytes (none when want is 0), retried when interrupted. A
// closed or failed connection goes to on_eof, which throws if requests wait on this peer.
TcpTransport::Received TcpTransport::receive(Peer& p, std::byte* dst, std::size_t want) {
  iovec iov{dst, want};
  return receive(p, &iov, want > 0 ? 1 : 0);
}

// The same into `count` iovecs (TLS: into the first; the caller comes back for the rest).
TcpTransport::Received TcpTransport::receive(Peer& p, iovec* iov, int count) {
  while (count > 0) {
    ssize_t n = p.tls ? p.tls->read(iov[0].iov_base, iov[0].iov_len) : receive_iov(p.fd.get(), iov, count);
    if (n > 0) return {.bytes = static_cast<std::size_t>(n)};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && would_block(errno)) return {.go_on = false};
    on_eof(p, n == 0 ? 0 : errno);
    return {.go_on = false};
  }
  return {};
}

TcpTransport::Received TcpTransport::read_header(Peer& p) {
  Received step = receive(p, reinterpret_cast<std::byte*>(&p.in_header) + p.in_header_got,
                          sizeof(WireHeader) - p.in_header_got);
  p.in_header_got += step.bytes;
  if (p.in_header_got == sizeof(WireHeader)) start_frame(p);
  return step;
}

// A complete header: checks it and sets the target its frame reads next.
void TcpTransport::start_frame(Peer& p) {
  p.in_header_got = 0;
  std::string problem = validate_header(p.in_header);
  if (!problem.empty()) {
    throw Corrupt({.rank = options_.rank, .peer = p.rank, .op = "recv"},
                  fmt::format("TCP stream from rank {}: {}", p.rank, problem));
  }
  switch (static_cast<FrameType>(p.in_header.frame)) {
    case FrameType::kData:
      p.incoming = p.matcher.begin_message(p.in_header);
      receive_stripes(p);
      p.reading = Peer::ReadTarget::kDataPayload;
      break;
    case FrameType::kAbort:
      p.abort_kind = p.in_header.op;
      // validate_header bounds the text by kMaxAbortMessage.
      p.abort_text.assign(static_cast<std::size_t>(p.in_header.bytes), '\0');
      p.abort_text_got = 0;
      p.reading = Peer::ReadTarget::kAbortText;
      break;
    case FrameType::kBye: p.bye_received = true; break;
  }
}

// Into the matched receive's buffer, or the matcher's for a message no receive asked for yet.
TcpTransport::Received TcpTransport::read_data_payload(Peer& p) {
  IncomingMessage& m = *p.incoming;
  iovec iov[kMaxPayloadIov];
  const std::size_t count = m.dst.iov(m.received, std::min<std::uint64_t>(m.remaining(), kMaxIo), iov, kMaxPayloadIov);
  Received step = receive(p, iov, static_cast<int>(count));
  m.received += step.bytes;
  if (m.recv && !p.striped_in) m.recv->transferred = m.received;
  if (m.remaining() == 0) {
    if (p.striped_in) stripe_arrived(p, m.bytes, std::exchange(p.striped_in, nullptr));
    else p.matcher.finish_message(m);
    p.incoming.reset();
    p.reading = Peer::ReadTarget::kHeader;
  }
  return step;
}

// The peer stopped and says why: once the whole text is in, raise its error here.
TcpTransport::Received TcpTransport::read_abort_text(Peer& p) {
  Received step = receive(p, reinterpret_cast<std::byte*>(p.abort_text.data()) + p.abort_text_got,
                          p.abort_text.size() - p.abort_text_got);
  p.abort_text_got += step.bytes;
  if (p.abort_text_got == p.abort_text.size()) {
    auto kind = static_cast<ErrorKind>(p.abort_kind);
    if (p.abort_kind < 1 || p.abort_kind > static_cast<std::uint8_t>(ErrorKind::kSystem)) kind = ErrorKind::kCorrupt;
    throw_error(kind, {.rank = options_.rank, .peer = p.rank, .op = "abort"},
                fmt::format("rank {} stopped and reported: {}", p.rank, p.abort_text));
  }
  return step;
}

void TcpTransport::on_eof(Peer& p, int err) {
  if (p.bye_received && err == 0) {
    p.state = Peer::State::kClosed;
    p.lost_reason = fmt::format("rank {} has already shut down its communicator", p.rank);
  } else {
    p.state = Peer::State::kLost;
    p.lost_reason = err == 0 ? fmt::format("connection to rank {} closed unexpectedly (did the process die?)", p.rank)
                             : fmt::format("connection to rank {} failed: {}", p.rank, std::strerror(err));
  }
  if (p.pending()) throw_lost(p, p.lost_reason);
}

void TcpTransport::throw_lost(const Peer& p, const std::string& why) const {
  ErrorContext ctx{.rank = options_.rank, .peer = p.rank, .op = "recv"};
  if (const Request* r = p.oldest_request()) {
    ctx.op = r->is_send() ? "send" : "recv";
    ctx.seq = r->envelope.seq;
  }
  throw PeerLost(ctx, why);
}

void TcpTransport::check_peers() {
  check_silent_peers();
  for (auto& p : peers_) {
    if (p->state != Peer::State::kOpen && p->pending()) throw_lost(*p, p->lost_reason);
  }
}

void TcpTransport::check_silent_peers() {
  if (lost_after_.count() <= 0 || Clock::now() < next_silence_check_) return;
  next_silence_check_ = Clock::now() + std::chrono::seconds(1);
  for (auto& p : peers_) {
    if (p->state != Peer::State::kOpen) continue;
    std::optional<Seconds> silent = p->silence.check(p->fd.get(), lost_after_);
    for (StripeStream& s : p->stripes) {
      if (!silent) silent = s.silence.check(s.fd.get(), lost_after_);
    }
    if (silent) {
      p->state = Peer::State::kLost;
      p->lost_reason = fmt::format(
          "rank {} has acknowledged nothing for {:.1f} s while this rank kept retrying (link cut, packets dropped or "
          "host down?; BRAID_PEER_TIMEOUT={:g})",
          p->rank, silent->count(), lost_after_.count());
    }
  }
}

std::string TcpTransport::lost_reason(int peer_rank) {
  Peer& p = peer(peer_rank);
  if (p.state == Peer::State::kOpen) return {};
  return p.lost_reason.empty() ? fmt::format("the connection to rank {} closed", p.rank) : p.lost_reason;
}

std::optional<Envelope> TcpTransport::unexpected(int peer_rank, const MatchKey& key) {
  return peer(peer_rank).matcher.oldest_unexpected(key);
}

void TcpTransport::arm_wakeup(WakeupArm& arm) {
  for (auto& p : peers_) {
    if (p->state != Peer::State::kOpen) continue;
    short events = POLLIN;
    if (p->wants_to_write()) events |= POLLOUT;
    arm.poll_fds.push_back(pollfd{.fd = p->fd.get(), .events = events, .revents = 0});
    // An extra stream is read only while a stripe is expected on it (tcp_stripe_stream.h):
    // waiting for POLLIN otherwise would wake at once for bytes nobody may read yet.
    for (const StripeStream& s : p->stripes) {
      short stripe_events = static_cast<short>((s.in.empty() ? 0 : POLLIN) | (s.out.empty() ? 0 : POLLOUT));
      if (stripe_events != 0) arm.poll_fds.push_back(pollfd{.fd = s.fd.get(), .events = stripe_events, .revents = 0});
    }
  }
}

void TcpTransport::sleep(const WakeupArm& arm, Seconds max_wait) {
  // Bytes TLS decrypted but nobody read yet make no socket readable: do not wait on them.
  for (const auto& p : peers_) {
    if (p->tls && p->state == Peer::State::kOpen && p->tls->pending() > 0) return;
  }
  std::vector<pollfd> fds = arm.poll_fds;
  auto ms = static_cast<int>(max_wait.count() * 1000.0 + 0.999);
  ::poll(fds.data(), fds.size(), std::max(ms, 0));
}

void TcpTransport::send_abort(int peer_rank, const Error& error) noexcept {
  if (peer_rank < 0 || static_cast<std::size_t>(peer_rank) >= peer_index_.size() ||
      peer_index_[static_cast<std::size_t>(peer_rank)] < 0) {
    return;
  }
  Peer& p = *peers_[static_cast<std::size_t>(peer_index_[static_cast<std::size_t>(peer_rank)])];
  if (p.state != Peer::State::kOpen) return;
  std::string text = std::string(error.what()).substr(0, kMaxAbortMessage);
  WireHeader h = make_abort_header(static_cast<std::uint8_t>(error.kind()), text.size());
  p.control.append(reinterpret_cast<const char*>(&h), sizeof h);
  p.control.append(text);
  // This rank is about to stop progressing: push the frame out now if the stream is between
  // data frames. If it is mid-frame, the peer learns from the connection closing instead.
  try {
    if (!p.out_active) progress_sends(p);
  } catch (...) {
  }
}

void TcpTransport::fail_all(const std::exception_ptr& error) noexcept {
  for (auto& p : peers_) {
    for (auto& s : p->sends) s->fail(error);
    p->sends.clear();
    p->out_active = false;
    if (p->incoming && p->incoming->recv) p->incoming->recv->fail(error);
    p->incoming.reset();
    if (p->reading == Peer::ReadTarget::kDataPayload) p->reading = Peer::ReadTarget::kHeader;
    p->striped_in.reset();
    for (StripeStream& s : p->stripes) {
      for (StripeOut& out : s.out) {
        if (!out.send->complete.load(std::memory_order_acquire)) out.send->fail(error);
      }
      s.out.clear();
      for (StripeIn& in : s.in) {
        const RequestPtr& recv = in.target->message.recv;
        if (recv && !recv->complete.load(std::memory_order_acquire)) recv->fail(error);
      }
      s.in.clear();
    }
    p->matcher.fail_all(error);
  }
}

bool TcpTransport::has_pending() const {
  return std::any_of(peers_.begin(), peers_.end(), [](const auto& p) { return p->pending(); });
}

// As a link that breaks: both directions shut at once, without a bye; this end notices on its
// next read or write, the peer at its next read (EOF), and both raise PeerLost.
bool TcpTransport::close_for_fault(int rank) noexcept {
  Peer& p = peer(rank);
  if (p.state != Peer::State::kOpen) return false;
  ::shutdown(p.fd.get(), SHUT_RDWR);
  for (StripeStream& s : p.stripes) ::shutdown(s.fd.get(), SHUT_RDWR);
  return true;
}

void TcpTransport::shutdown(Deadline deadline) noexcept {
  // Orderly close: bye, half-close, then read to EOF. Closing with unread bytes would make
  // the kernel send RST, which can discard data the peer has not read yet.
  for (auto& p : peers_) {
    if (p->state != Peer::State::kOpen) continue;
    try {
      if (p->out_active) continue;  // a send was abandoned mid-frame; the peer sees EOF
      WireHeader bye = make_bye_header();
      p->control.append(reinterpret_cast<const char*>(&bye), sizeof bye);
      if (p->tls) p->tls->write_all(p->control.data(), p->control.size(), deadline);
      else net::write_all(p->fd.get(), p->control.data(), p->control.size(), deadline, {.rank = options_.rank, .peer = p->rank, .op = "shutdown"});
      p->control.clear();
      ::shutdown(p->fd.get(), SHUT_WR);
      for (StripeStream& s : p->stripes) {
        if (s.out.empty()) ::shutdown(s.fd.get(), SHUT_WR);  // else abandoned mid-stripe: the peer sees EOF
      }
    } catch (...) {
    }
  }
  for (auto& p : peers_) {
    if (p->state != Peer::State::kOpen) continue;
    drain_to_eof(p->fd.get(), deadline);
    for (StripeStream& s : p->stripes) drain_to_eof(s.fd.get(), deadline);
    p->state = Peer::State::kClosed;
  }
}

}  // namespace braid::tcp
