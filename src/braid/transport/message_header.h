// The fixed 48-byte header in front of every frame on every transport (shm rings and TCP
// streams alike). It is checked before any byte behind it is trusted: magic, version, frame
// type, op kind, dtype, reduction op and root ranges, a payload bound, and a CRC32C over the
// header itself, so a stray or corrupted byte stream raises braid::Corrupt instead of being
// read as a length.
//
// Byte order is the host's: braid assumes every rank of a job shares it (all x86-64 / AArch64
// hosts are little-endian); the magic would read reversed otherwise and raise Corrupt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "braid/transport/envelope.h"

namespace braid {

enum class FrameType : std::uint8_t {
  kData = 1,   // a message: payload of header.bytes bytes follows
  kAbort = 2,  // the sender hit an error involving us; payload is its message, op holds ErrorKind
  kBye = 3,    // orderly shutdown: no more frames follow
};

inline constexpr std::uint32_t kFrameMagic = 0x4d445242;  // "BRDM"
// 2: the call's reduction op, algorithm id and root joined the header (they were reserved,
// zero bytes in 1), and the CRC moved to the last four bytes.
inline constexpr std::uint16_t kWireVersion = 2;
// Abort frames carry a human-readable message; longer ones are truncated by the sender.
inline constexpr std::uint64_t kMaxAbortMessage = 4096;
// Data payloads above this are refused as corrupt (1 TiB: no single message is that big).
inline constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{1} << 40;

struct WireHeader {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint8_t frame;
  std::uint8_t op;
  std::uint64_t comm_id;
  std::uint32_t tag;
  std::uint8_t channel;
  std::uint8_t dtype;
  std::uint8_t reduce_op;  // 0: none, else ReduceOp + 1
  std::uint8_t algorithm;  // Envelope::algorithm (0: none)
  std::int64_t seq;
  std::uint64_t bytes;
  std::int32_t root;  // kNoRoot (-1) or the root rank
  std::uint32_t crc;  // CRC32C of every byte above
};
static_assert(sizeof(WireHeader) == 48, "the wire header is 48 bytes");

WireHeader make_data_header(const MatchKey& key, const Envelope& envelope);
WireHeader make_abort_header(std::uint8_t error_kind, std::uint64_t message_bytes);
WireHeader make_bye_header();

// Returns an empty string when `h` is well formed, else what is wrong with it.
std::string validate_header(const WireHeader& h);

MatchKey key_of(const WireHeader& h);
Envelope envelope_of(const WireHeader& h);

}  // namespace braid
