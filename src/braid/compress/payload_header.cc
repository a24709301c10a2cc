#include "braid/compress/payload_header.h"

#include <cstring>

#include <fmt/format.h>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"

namespace braid::compress {

namespace {

constexpr std::size_t kCrcOffset = 48;

template <typename T>
void put(std::span<std::byte> out, std::size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));  // x86 and every target braid runs on is little-endian
}

template <typename T>
T get(std::span<const std::byte> in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

std::uint32_t checksum(std::span<const std::byte> whole, std::uint64_t payload_bytes) {
  std::uint32_t crc = crc32c(whole.data(), kCrcOffset);
  return crc32c(whole.data() + kPayloadHeaderBytes, payload_bytes, crc);
}

[[noreturn]] void corrupt(const std::string& why) {
  throw Corrupt({.op = "decode"}, fmt::format("compressed payload: {}", why));
}

}  // namespace

void write_payload_header(PayloadHeader header, std::span<std::byte> out) {
  std::memset(out.data(), 0, kPayloadHeaderBytes);
  put<std::uint32_t>(out, 0, kPayloadMagic);
  put<std::uint8_t>(out, 4, kPayloadVersion);
  put<std::uint8_t>(out, 5, static_cast<std::uint8_t>(header.codec));
  put<std::uint8_t>(out, 6, header.flags);
  put<std::uint64_t>(out, 8, header.count);
  put<std::uint32_t>(out, 20, header.block);
  put<std::uint64_t>(out, 24, header.aux);
  put<std::uint64_t>(out, 32, header.seed);
  put<std::uint64_t>(out, 40, header.payload_bytes);
  if (header.flags & kHasChecksum) put<std::uint32_t>(out, kCrcOffset, checksum(out, header.payload_bytes));
}

PayloadHeader read_payload_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kPayloadHeaderBytes) {
    corrupt(fmt::format("{} bytes is shorter than the {}-byte header", bytes.size(), kPayloadHeaderBytes));
  }
  if (auto magic = get<std::uint32_t>(bytes, 0); magic != kPayloadMagic) corrupt(fmt::format("bad magic {:#010x}", magic));
  if (auto version = get<std::uint8_t>(bytes, 4); version != kPayloadVersion) {
    corrupt(fmt::format("version {} (this build reads version {})", version, kPayloadVersion));
  }
  auto codec = get<std::uint8_t>(bytes, 5);
  if (!is_valid_codec_id(codec)) corrupt(fmt::format("unknown codec id {}", codec));
  PayloadHeader header;
  header.codec = static_cast<CodecId>(codec);
  header.flags = get<std::uint8_t>(bytes, 6);
  if (header.flags & ~kHasChecksum) corrupt(fmt::format("unknown flags {:#04x}", header.flags));
  if (get<std::uint8_t>(bytes, 7) != 0 || get<std::uint32_t>(bytes, 16) != 0 || get<std::uint32_t>(bytes, 52) != 0) {
    corrupt("reserved header bytes are not zero");
  }
  header.count = get<std::uint64_t>(bytes, 8);
  header.block = get<std::uint32_t>(bytes, 20);
  header.aux = get<std::uint64_t>(bytes, 24);
  header.seed = get<std::uint64_t>(bytes, 32);
  header.payload_bytes = get<std::uint64_t>(bytes, 40);
  header.crc = get<std::uint32_t>(bytes, kCrcOffset);
  if (header.payload_bytes != bytes.size() - kPayloadHeaderBytes) {
    corrupt(fmt::format("header announces {} payload bytes, {} follow", header.payload_bytes,
                        bytes.size() - kPayloadHeaderBytes));
  }
  if (header.flags & kHasChecksum) {
    if (auto actual = checksum(bytes, header.payload_bytes); actual != header.crc) {
      corrupt(fmt::format("CRC32C mismatch (header {:#010x}, computed {:#010x})", header.crc, actual));
    }
  } else if (header.crc != 0) {
    corrupt("checksum field set without the checksum flag");
  }
  return header;
}

}  // namespace braid::compress
