// One point-to-point transfer in flight: a send or a receive, owned jointly by the caller's
// Work handle and the transport moving its bytes (so dropping a handle never leaves a
// transport writing through a dangling request).
//
// Thread-safety: every field but `complete` is touched only under the Fabric's lock.
// `complete` is written (release) by the progressing thread and may be read (acquire)
// without the lock by test().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "braid/transport/envelope.h"
#include "braid/transport/message_buffer.h"

namespace braid {

// Request::peer of a receive that takes the first matching message from any of the ranks it
// was offered to (Fabric::post_any_source): the matcher that matches it sets peer to the sender.
inline constexpr int kAnySource = -1;

struct Request {
  enum class Kind : std::uint8_t { kSend, kRecv };

  Kind kind = Kind::kSend;
  int peer = -1;       // global rank of the other side; kAnySource until an any-source receive is matched
  MatchKey key;
  Envelope envelope;   // send: what is sent; recv: what is expected
  std::byte* data = nullptr;  // send: the source (never written); recv: the destination
  // A gather send or scatter receive (Communicator::isendv / irecvv): the message's bytes in
  // these pieces, in order, summing to envelope.bytes; `data` is unused then.
  std::vector<BufferPiece> pieces;
  // Fault injection (BRAID_FAULT kind=flip, fabric.h): the transport flips a bit of this
  // send's header after computing its CRC, so the receiver must raise Corrupt.
  bool inject_corrupt_header = false;

  // Progress, owned by the transport handling the request.
  std::uint64_t transferred = 0;
  std::exception_ptr error;
  std::atomic<bool> complete{false};

  bool is_send() const { return kind == Kind::kSend; }
  MessageBuffer buffer() const { return pieces.empty() ? MessageBuffer(data) : MessageBuffer(pieces); }
  void finish() { complete.store(true, std::memory_order_release); }
  void fail(std::exception_ptr e) {
    error = std::move(e);
    finish();
  }
};

using RequestPtr = std::shared_ptr<Request>;

}  // namespace braid
