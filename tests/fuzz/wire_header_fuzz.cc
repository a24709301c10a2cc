// libFuzzer target over the transport's frame header and message matching
// (transport/message_header.h, matcher.h): what every shm ring reader and TCP stream reader does
// with the 48 bytes in front of each frame from a peer. The input is a sequence of records,
// each a command byte and a 48-byte header; a record either hands the header to the reader
// path (validate_header, then for a data frame Matcher::begin_message, the payload written
// into the buffer it returns, finish_message) or posts a receive shaped by it.
//
// Findings (fuzz_support.h):
//   - a crash or sanitizer report (a payload written past the buffer begin_message returned is
//     an ASan report: receive buffers are allocated at their exact size);
//   - a header validate_header accepts whose fields are out of range (frame type, op, dtype,
//     channel, reduction op, root, payload bound), or a data header that does not re-encode to
//     itself through key_of / envelope_of / make_data_header;
//   - an exception from the matcher other than Corrupt (over the buffer limit) or Mismatch (a
//     posted receive expected another envelope);
//   - buffering beyond the matcher's limit: a header announcing more than the limit must be
//     refused before anything is allocated for it;
//   - a completed receive holding other bytes than its message's payload, or a transferred
//     count other than its size; a receive left incomplete by fail_all.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "braid/base/crc32c.h"
#include "braid/transport/matcher.h"
#include "braid/transport/message_header.h"
#include "fuzz_support.h"

namespace braid {
namespace {

using fuzz::require;

// Small enough that one input cannot make the fuzzer allocate much, large enough that many
// messages buffer side by side.
constexpr std::uint64_t kBufferLimit = 1 << 20;
// Receives the input posts are at most this large (their buffers are really allocated).
constexpr std::uint64_t kMaxPostedBytes = 1 << 16;

// The payload byte i of a message with `key`: what its receive must hold afterwards.
std::byte payload_byte(const MatchKey& key, std::uint64_t i) {
  return static_cast<std::byte>((key.tag * 31u + key.comm_id + i) & 0xffu);
}

struct Posted {
  RequestPtr request;
  std::unique_ptr<std::byte[]> buffer;  // exactly envelope.bytes (at least 1) bytes
};

void check_fields(const WireHeader& h) {
  switch (static_cast<FrameType>(h.frame)) {
    case FrameType::kData:
      require(is_valid_op_kind(h.op) && is_valid_dtype(h.dtype), "a data header with an unknown op or dtype passed");
      require(h.channel <= static_cast<std::uint8_t>(Channel::kCollective), "a data header with an unknown channel");
      require(h.reduce_op <= static_cast<std::uint8_t>(ReduceOp::kProd) + 1, "an unknown reduction op passed");
      require(h.root >= kNoRoot && h.bytes <= kMaxPayloadBytes, "a root or payload size out of range passed");
      {
        WireHeader again = make_data_header(key_of(h), envelope_of(h));
        require(std::memcmp(&again, &h, sizeof h) == 0, "a data header that does not re-encode to itself");
        require(envelope_difference(envelope_of(h), envelope_of(h)).empty(), "an envelope differs from itself");
        (void)describe(envelope_of(h));
      }
      return;
    case FrameType::kAbort: require(h.bytes <= kMaxAbortMessage, "an abort message over its bound passed"); return;
    case FrameType::kBye: require(h.bytes == 0, "a bye frame with a payload passed"); return;
  }
  fuzz::finding("validate_header accepted an unknown frame type");
}

class Session {
 public:
  void arrive(const WireHeader& h) {
    if (!validate_header(h).empty()) return;
    check_fields(h);
    if (static_cast<FrameType>(h.frame) != FrameType::kData) return;
    IncomingMessage message;
    if (!fuzz::succeeds("begin_message", {ErrorKind::kCorrupt, ErrorKind::kMismatch},
                        [&] { message = matcher_.begin_message(h); })) {
      return;
    }
    require(matcher_.buffered_bytes() <= kBufferLimit, "the matcher buffered past its limit");
    require(message.bytes == h.bytes && message.remaining() == h.bytes, "begin_message changed the payload size");
    const MatchKey key = key_of(h);
    for (std::uint64_t i = 0; i < message.bytes; ++i) {
      const std::byte b = payload_byte(key, i);
      message.dst.write(i, &b, 1);
    }
    message.received = message.bytes;
    matcher_.finish_message(message);
  }

  // A receive is posted by this rank's own code, so only a well-formed envelope is ever posted.
  void post(const WireHeader& h) {
    if (!validate_header(h).empty() || static_cast<FrameType>(h.frame) != FrameType::kData) return;
    Envelope envelope = envelope_of(h);
    envelope.bytes %= kMaxPostedBytes + 1;
    auto request = std::make_shared<Request>();
    request->kind = Request::Kind::kRecv;
    request->key = key_of(h);
    request->envelope = envelope;
    Posted posted{.request = request, .buffer = std::make_unique<std::byte[]>(std::max<std::uint64_t>(envelope.bytes, 1))};
    request->data = posted.buffer.get();
    // A Mismatch is thrown to the poster (the Fabric poisons itself with it): the receive was
    // never taken, so fail_all owes it nothing.
    if (fuzz::succeeds("post_recv", {ErrorKind::kMismatch}, [&] { matcher_.post_recv(request); })) {
      posted_.push_back(std::move(posted));
    }
  }

  // Every completed receive holds its message; fail_all completes the rest.
  void finish() {
    for (const Posted& p : posted_) check_delivery(p);
    matcher_.fail_all(std::make_exception_ptr(Corrupt({}, "fuzz input ended")));
    for (const Posted& p : posted_) require(p.request->complete.load(), "a receive left incomplete by fail_all");
    require(matcher_.buffered_bytes() == 0, "fail_all left bytes buffered");
  }

 private:
  static void check_delivery(const Posted& p) {
    const Request& r = *p.request;
    if (!r.complete.load() || r.error) return;
    require(r.transferred == r.envelope.bytes, "a receive completed with another byte count than it expected");
    for (std::uint64_t i = 0; i < r.transferred; ++i) {
      require(p.buffer[i] == payload_byte(r.key, i), "a receive holds bytes that are not its message's payload");
    }
  }

  Matcher matcher_{0, 1, kBufferLimit};
  std::vector<Posted> posted_;
};

}  // namespace
}  // namespace braid

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "wire_header_fuzz";
  braid::fuzz::quiet_logs();
  return 0;
}

// Records: command byte | 48 header bytes. Command bit 0: recompute the header's CRC (so that
// mutations reach the field checks); bit 1: post a receive shaped by the header instead of
// receiving it.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  fuzz::Cursor in(data, size);
  Session session;
  while (in.remaining() > 0) {
    const std::uint8_t command = in.u8();
    WireHeader h;
    std::memset(&h, 0, sizeof h);
    std::string_view bytes = in.bytes(sizeof h);
    std::memcpy(&h, bytes.data(), bytes.size());
    if (command & 1) h.crc = crc32c(&h, offsetof(WireHeader, crc));
    if (command & 2) {
      session.post(h);
    } else {
      session.arrive(h);
    }
  }
  session.finish();
  return 0;
}
