#include "braid/transport/message_header.h"

#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "braid/base/crc32c.h"

namespace braid {

namespace {

constexpr std::size_t kCrcCoveredBytes = offsetof(WireHeader, crc);

WireHeader blank_header(FrameType frame) {
  WireHeader h;
  std::memset(&h, 0, sizeof h);
  h.magic = kFrameMagic;
  h.version = kWireVersion;
  h.frame = static_cast<std::uint8_t>(frame);
  return h;
}

// ReduceOp values start at 0, so the wire shifts them by one to keep 0 for "none".
constexpr std::uint8_t kMaxWireReduceOp = static_cast<std::uint8_t>(ReduceOp::kProd) + 1;

std::uint8_t wire_reduce_op(const std::optional<ReduceOp>& op) {
  return op ? static_cast<std::uint8_t>(static_cast<std::uint8_t>(*op) + 1) : 0;
}

std::optional<ReduceOp> reduce_op_of(std::uint8_t wire) {
  if (wire == 0) return std::nullopt;
  return static_cast<ReduceOp>(wire - 1);
}

WireHeader seal(WireHeader h) {
  h.crc = crc32c(&h, kCrcCoveredBytes);
  return h;
}

}  // namespace

WireHeader make_data_header(const MatchKey& key, const Envelope& envelope) {
  WireHeader h = blank_header(FrameType::kData);
  h.op = static_cast<std::uint8_t>(envelope.op);
  h.comm_id = key.comm_id;
  h.tag = key.tag;
  h.channel = static_cast<std::uint8_t>(key.channel);
  h.dtype = static_cast<std::uint8_t>(envelope.dtype);
  h.reduce_op = wire_reduce_op(envelope.reduce_op);
  h.algorithm = envelope.algorithm;
  h.seq = envelope.seq;
  h.bytes = envelope.bytes;
  h.root = envelope.root;
  return seal(h);
}

WireHeader make_abort_header(std::uint8_t error_kind, std::uint64_t message_bytes) {
  WireHeader h = blank_header(FrameType::kAbort);
  h.op = error_kind;
  h.bytes = message_bytes;
  return seal(h);
}

WireHeader make_bye_header() { return seal(blank_header(FrameType::kBye)); }

std::string validate_header(const WireHeader& h) {
  if (h.magic != kFrameMagic) return fmt::format("bad frame magic 0x{:08x} (expected 0x{:08x})", h.magic, kFrameMagic);
  if (h.version != kWireVersion) return fmt::format("wire version {} (this build speaks {})", h.version, kWireVersion);
  if (h.crc != crc32c(&h, kCrcCoveredBytes)) return "header checksum mismatch";
  switch (static_cast<FrameType>(h.frame)) {
    case FrameType::kData:
      if (!is_valid_op_kind(h.op)) return fmt::format("unknown op kind {}", h.op);
      if (!is_valid_dtype(h.dtype)) return fmt::format("unknown dtype {}", h.dtype);
      if (h.channel > static_cast<std::uint8_t>(Channel::kCollective)) return fmt::format("unknown channel {}", h.channel);
      if (h.reduce_op > kMaxWireReduceOp) return fmt::format("unknown reduction op {}", h.reduce_op);
      if (h.root < kNoRoot) return fmt::format("invalid root {}", h.root);
      if (h.bytes > kMaxPayloadBytes) return fmt::format("payload of {} bytes exceeds the {} limit", h.bytes, kMaxPayloadBytes);
      return {};
    case FrameType::kAbort:
      if (h.bytes > kMaxAbortMessage) return fmt::format("abort message of {} bytes exceeds {}", h.bytes, kMaxAbortMessage);
      return {};
    case FrameType::kBye:
      if (h.bytes != 0) return "bye frame with a payload";
      return {};
  }
  return fmt::format("unknown frame type {}", h.frame);
}

MatchKey key_of(const WireHeader& h) {
  return MatchKey{.comm_id = h.comm_id, .channel = static_cast<Channel>(h.channel), .tag = h.tag};
}

Envelope envelope_of(const WireHeader& h) {
  return Envelope{.op = static_cast<OpKind>(h.op), .seq = h.seq, .dtype = static_cast<DType>(h.dtype), .bytes = h.bytes,
                  .reduce_op = reduce_op_of(h.reduce_op), .root = h.root, .algorithm = h.algorithm};
}

}  // namespace braid
