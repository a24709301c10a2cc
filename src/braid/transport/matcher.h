// Message matching for one peer, shared by every transport: a receive takes the oldest
// message from that peer with the same MatchKey (MPI's non-overtaking rule). A message that
// arrives before its receive is posted is buffered ("unexpected"); one whose receive is
// already posted streams straight into the receive's buffer, with no extra copy.
//
// An any-source receive (peer kAnySource) is posted to the matchers of every rank it may come
// from, in the same queues as the receives for that rank, so it keeps its place in each
// peer's order. The first matcher to match it claims it by setting its peer to that rank; the
// others then skip it and drop it the next time they look (the Fabric's lock makes the claim
// atomic).
//
// The matched receive's expected envelope is compared with the message's: any difference
// (size, op, sequence number, dtype) throws braid::Mismatch before a byte is written.
//
// Buffering is the one place a peer's word decides an allocation: the header announces the
// size. So the bytes buffered from one peer are bounded by this host's physical memory, and a
// header beyond it (a corrupt one, or a send far larger than anything the receiver could
// take) is refused with braid::Corrupt before anything is allocated, never a bad_alloc or the
// OOM killer.
//
// Thread-safety: none; the Fabric's lock serialises all calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "braid/transport/message_header.h"
#include "braid/transport/payload_pool.h"
#include "braid/transport/request.h"

namespace braid {

// A message whose receive was not posted when it arrived.
struct UnexpectedMessage {
  MatchKey key;
  Envelope envelope;
  PayloadBuffer payload;  // from the matcher's pool, back to it once delivered
  bool complete = false;
  RequestPtr waiting_recv;  // a receive posted while the payload was still arriving
};

// Where an arriving message's payload goes, and how far it got.
struct IncomingMessage {
  MessageBuffer dst;  // the matched receive's buffer, or the unexpected message's
  std::uint64_t bytes = 0;
  std::uint64_t received = 0;
  RequestPtr recv;                                  // matched at arrival, or
  std::shared_ptr<UnexpectedMessage> unexpected;    // buffered until a receive claims it

  std::uint64_t remaining() const { return bytes - received; }
};

class Matcher {
 public:
  // `buffer_limit`: the most bytes buffered for unexpected messages at once (tests lower it).
  Matcher(int rank, int peer, std::uint64_t buffer_limit = host_memory_bytes())
      : rank_(rank), peer_(peer), buffer_limit_(buffer_limit) {}

  // This host's physical memory in bytes (UINT64_MAX when it cannot be read).
  static std::uint64_t host_memory_bytes();

  // Posts a receive; completes it at once if a buffered message matches.
  void post_recv(const RequestPtr& recv);
  // A data header from the peer arrived: decide where its payload goes. Throws Corrupt when
  // buffering it would pass the buffer limit.
  IncomingMessage begin_message(const WireHeader& header);
  // The whole payload of `message` has arrived.
  void finish_message(IncomingMessage& message);

  // Whether a receive posted for this peer alone waits (any-source receives do not count: a
  // transport must not call this peer lost for a receive some other rank may satisfy).
  bool has_posted_recvs() const;
  std::uint64_t buffered_bytes() const { return buffered_bytes_; }
  // The envelope of the oldest buffered message with `key`, if any (it may still be arriving).
  std::optional<Envelope> oldest_unexpected(const MatchKey& key) const;
  // Fails every posted receive (and receives waiting on partial messages) with `error`.
  void fail_all(const std::exception_ptr& error);

 private:
  void check_envelope(const Request& recv, const Envelope& actual) const;
  static void deliver(const UnexpectedMessage& message, Request& recv);
  void require_room(const Envelope& envelope) const;
  void forget(std::deque<std::shared_ptr<UnexpectedMessage>>::iterator it);
  // Whether `recv` may take a message from this peer: its own receive, or an unclaimed any-source one.
  bool accepts(const Request& recv) const { return recv.peer == peer_ || recv.peer == kAnySource; }
  // Makes `recv` this peer's (an any-source receive is claimed).
  void claim(Request& recv);
  // Drops any-source receives another matcher has claimed.
  void drop_claimed();

  int rank_;
  int peer_;
  std::uint64_t buffer_limit_;
  std::uint64_t buffered_bytes_ = 0;
  std::deque<RequestPtr> posted_;
  std::size_t any_source_posted_ = 0;  // any-source receives in posted_ (claimed or not)
  std::deque<std::shared_ptr<UnexpectedMessage>> unexpected_;
  PayloadPool pool_;  // delivered messages' buffers, for the next ones
};

}  // namespace braid
