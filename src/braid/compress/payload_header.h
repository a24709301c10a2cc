// The header in front of every compressed payload: a stable, versioned wire format that a
// decoder can check before trusting a single byte after it (DESIGN.md, "Security": every
// length and index read off the wire is bounds-checked).
//
// Layout (little-endian, 56 bytes, no padding):
//   0  u32 magic "BRZC"        20 u32 block (int8/sign block, powersgd rank; else 0)
//   4  u8  version (1)         24 u64 aux (topk/randomk: k; powersgd: rows; else 0)
//   5  u8  codec id            32 u64 seed (randomk index seed, powersgd Q seed; else 0)
//   6  u8  flags               40 u64 payload bytes (what follows the header)
//   7  u8  reserved (0)        48 u32 crc32c (flags & kHasChecksum; else 0)
//   8  u64 element count       52 u32 reserved (0)
//   16 u32 reserved (0)
// The checksum (CRC32C, ISA-L) covers header bytes [0, 48) and then the payload, so a flipped
// count or codec id is caught as surely as a flipped value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "braid/compress/codec_spec.h"

namespace braid::compress {

inline constexpr std::uint32_t kPayloadMagic = 0x435a5242;  // "BRZC" read as little-endian u32
inline constexpr std::uint8_t kPayloadVersion = 1;
inline constexpr std::size_t kPayloadHeaderBytes = 56;

enum PayloadFlags : std::uint8_t {
  kHasChecksum = 1u << 0,
};

struct PayloadHeader {
  CodecId codec = CodecId::kNone;
  std::uint8_t flags = 0;
  std::uint64_t count = 0;
  std::uint32_t block = 0;
  std::uint64_t aux = 0;
  std::uint64_t seed = 0;
  std::uint64_t payload_bytes = 0;
  std::uint32_t crc = 0;
};

// Writes `header` into out[0, kPayloadHeaderBytes). If header.flags has kHasChecksum, the crc
// field is computed over the header and out[kPayloadHeaderBytes, +payload_bytes), which must
// already hold the payload. REQUIRES: out.size() >= kPayloadHeaderBytes + payload_bytes.
void write_payload_header(PayloadHeader header, std::span<std::byte> out);

// Reads and checks the header of `bytes` (a whole payload, header included): magic, version,
// a known codec id, no unknown flags, zero reserved bytes, payload_bytes equal to what follows
// the header, and the checksum when present. Throws braid::Corrupt naming what failed; it
// does not check codec-specific fields (each decoder does, knowing its codec's sizes).
PayloadHeader read_payload_header(std::span<const std::byte> bytes);

}  // namespace braid::compress
