// Message matching for one peer, shared by every transport: a receive takes the oldest
// message from that peer with the same MatchKey (MPI's non-overtaking rule). A message that
// arrives before its receive is posted is buffered ("unexpected"); one whose receive is
// already posted streams straight into the receive's buffer, with no extra copy.
//
// The matched receive's expected envelope is compared with the message's: any difference
// (size, op, sequence number, dtype) throws braid::Mismatch before a byte is written.
//
// Thread-safety: none; the Fabric's lock serialises all calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "braid/transport/message_header.h"
#include "braid/transport/request.h"

namespace braid {

// A message whose receive was not posted when it arrived.
struct UnexpectedMessage {
  MatchKey key;
  Envelope envelope;
  std::unique_ptr<std::byte[]> data;
  bool complete = false;
  RequestPtr waiting_recv;  // a receive posted while the payload was still arriving
};

// Where an arriving message's payload goes, and how far it got.
struct IncomingMessage {
  std::byte* dst = nullptr;
  std::uint64_t bytes = 0;
  std::uint64_t received = 0;
  RequestPtr recv;                                  // matched at arrival, or
  std::shared_ptr<UnexpectedMessage> unexpected;    // buffered until a receive claims it

  std::uint64_t remaining() const { return bytes - received; }
};

class Matcher {
 public:
  Matcher(int rank, int peer) : rank_(rank), peer_(peer) {}

  // Posts a receive; completes it at once if a buffered message matches.
  void post_recv(const RequestPtr& recv);
  // A data header from the peer arrived: decide where its payload goes.
  IncomingMessage begin_message(const WireHeader& header);
  // The whole payload of `message` has arrived.
  void finish_message(IncomingMessage& message);

  bool has_posted_recvs() const { return !posted_.empty(); }
  // The envelope of the oldest buffered message with `key`, if any (it may still be arriving).
  std::optional<Envelope> oldest_unexpected(const MatchKey& key) const;
  // Fails every posted receive (and receives waiting on partial messages) with `error`.
  void fail_all(const std::exception_ptr& error);

 private:
  void check_envelope(const Request& recv, const Envelope& actual) const;
  static void deliver(const UnexpectedMessage& message, Request& recv);

  int rank_;
  int peer_;
  std::deque<RequestPtr> posted_;
  std::deque<std::shared_ptr<UnexpectedMessage>> unexpected_;
};

}  // namespace braid
