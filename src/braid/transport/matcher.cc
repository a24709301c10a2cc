#include "braid/transport/matcher.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

std::string gib(std::uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1u << 30)); }

}  // namespace

std::uint64_t Matcher::host_memory_bytes() {
  static const std::uint64_t bytes = [] {
    long pages = ::sysconf(_SC_PHYS_PAGES);
    long page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }();
  return bytes;
}

bool Matcher::has_posted_recvs() const {
  if (any_source_posted_ == 0) return !posted_.empty();
  return std::any_of(posted_.begin(), posted_.end(), [&](const RequestPtr& r) { return r->peer == peer_; });
}

void Matcher::claim(Request& recv) { recv.peer = peer_; }

void Matcher::drop_claimed() {
  if (any_source_posted_ == 0) return;
  // An any-source receive that is still here with another peer's rank was matched there.
  std::erase_if(posted_, [&](const RequestPtr& r) { return !accepts(*r); });
  any_source_posted_ = static_cast<std::size_t>(
      std::count_if(posted_.begin(), posted_.end(), [](const RequestPtr& r) { return r->peer == kAnySource; }));
}

void Matcher::post_recv(const RequestPtr& recv) {
  drop_claimed();
  auto it = std::find_if(unexpected_.begin(), unexpected_.end(),
                         [&](const auto& m) { return m->key == recv->key && !m->waiting_recv; });
  if (it == unexpected_.end()) {
    if (recv->peer == kAnySource) ++any_source_posted_;
    posted_.push_back(recv);
    return;
  }
  check_envelope(*recv, (*it)->envelope);
  claim(*recv);
  if (!(*it)->complete) {
    (*it)->waiting_recv = recv;  // finish_message delivers it
    return;
  }
  deliver(**it, *recv);
  forget(it);
}

IncomingMessage Matcher::begin_message(const WireHeader& header) {
  MatchKey key = key_of(header);
  Envelope envelope = envelope_of(header);
  IncomingMessage message;
  message.bytes = envelope.bytes;
  drop_claimed();
  auto it = std::find_if(posted_.begin(), posted_.end(), [&](const RequestPtr& r) { return r->key == key; });
  if (it != posted_.end()) {
    check_envelope(**it, envelope);
    message.recv = *it;
    message.dst = message.recv->buffer();
    if (message.recv->peer == kAnySource) --any_source_posted_;
    claim(*message.recv);
    posted_.erase(it);
    return message;
  }
  require_room(envelope);
  auto buffered = std::make_shared<UnexpectedMessage>();
  buffered->key = key;
  buffered->envelope = envelope;
  buffered->payload = pool_.take(static_cast<std::size_t>(envelope.bytes));
  message.dst = MessageBuffer(buffered->payload.data.get());
  message.unexpected = buffered;
  buffered_bytes_ += envelope.bytes;
  unexpected_.push_back(std::move(buffered));
  return message;
}

void Matcher::finish_message(IncomingMessage& message) {
  if (message.recv) {
    message.recv->transferred = message.bytes;
    message.recv->finish();
    return;
  }
  UnexpectedMessage& buffered = *message.unexpected;
  buffered.complete = true;
  if (!buffered.waiting_recv) return;
  deliver(buffered, *buffered.waiting_recv);
  auto it = std::find(unexpected_.begin(), unexpected_.end(), message.unexpected);
  if (it != unexpected_.end()) forget(it);
}

void Matcher::fail_all(const std::exception_ptr& error) {
  // An any-source receive another matcher claimed is that matcher's to fail.
  for (auto& recv : posted_) {
    if (accepts(*recv) && !recv->complete.load(std::memory_order_acquire)) recv->fail(error);
  }
  posted_.clear();
  any_source_posted_ = 0;
  for (auto& buffered : unexpected_) {
    if (buffered->waiting_recv) buffered->waiting_recv->fail(error);
  }
  unexpected_.clear();
  buffered_bytes_ = 0;
}

void Matcher::require_room(const Envelope& envelope) const {
  if (envelope.bytes <= buffer_limit_ - buffered_bytes_) return;  // buffered_bytes_ never passes the limit
  throw Corrupt({.rank = rank_, .peer = peer_, .op = "recv"},
                fmt::format("rank {} announced a {}-byte message ({}) that no receive was posted for; with {} already "
                            "buffered from it this passes the {} a rank may buffer (its host's memory): refused before allocating (a "
                            "corrupt header, or a send far larger than any receive here)",
                            peer_, envelope.bytes, gib(envelope.bytes), gib(buffered_bytes_), gib(buffer_limit_)));
}

// Only delivered (complete) messages are forgotten, so their payload is free to reuse.
void Matcher::forget(std::deque<std::shared_ptr<UnexpectedMessage>>::iterator it) {
  buffered_bytes_ -= (*it)->envelope.bytes;
  pool_.give(std::move((*it)->payload));
  unexpected_.erase(it);
}

void Matcher::check_envelope(const Request& recv, const Envelope& actual) const {
  std::string difference = envelope_difference(recv.envelope, actual);
  if (difference.empty()) return;
  throw Mismatch({.rank = rank_, .peer = peer_, .op = std::string(op_kind_name(recv.envelope.op)), .seq = recv.envelope.seq},
                 difference);
}

void Matcher::deliver(const UnexpectedMessage& message, Request& recv) {
  recv.buffer().write(0, message.payload.data.get(), static_cast<std::size_t>(message.envelope.bytes));
  recv.transferred = message.envelope.bytes;
  recv.finish();
}

std::optional<Envelope> Matcher::oldest_unexpected(const MatchKey& key) const {
  for (const auto& message : unexpected_) {
    if (message->key == key) return message->envelope;
  }
  return std::nullopt;
}

}  // namespace braid
