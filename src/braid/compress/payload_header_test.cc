#include "braid/compress/payload_header.h"

#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::compress {
namespace {

std::vector<std::byte> sample(bool checksum) {
  std::vector<std::byte> bytes(kPayloadHeaderBytes + 8);
  for (std::size_t i = 0; i < 8; ++i) bytes[kPayloadHeaderBytes + i] = std::byte(i * 31 + 7);
  write_payload_header({.codec = CodecId::kInt8, .flags = std::uint8_t(checksum ? kHasChecksum : 0), .count = 5,
                        .block = 4, .aux = 9, .seed = 77, .payload_bytes = 8},
                       bytes);
  return bytes;
}

TEST(PayloadHeaderTest, RoundTripsEveryField) {
  auto bytes = sample(true);
  PayloadHeader h = read_payload_header(bytes);
  EXPECT_EQ(h.codec, CodecId::kInt8);
  EXPECT_EQ(h.flags, kHasChecksum);
  EXPECT_EQ(h.count, 5u);
  EXPECT_EQ(h.block, 4u);
  EXPECT_EQ(h.aux, 9u);
  EXPECT_EQ(h.seed, 77u);
  EXPECT_EQ(h.payload_bytes, 8u);
  EXPECT_NE(h.crc, 0u);
}

TEST(PayloadHeaderTest, EveryFlippedBitIsCaughtWhenChecksummed) {
  auto good = sample(true);
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[byte] ^= std::byte(1 << bit);
      EXPECT_THROW(read_payload_header(bad), Corrupt) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(PayloadHeaderTest, RefusesTruncatedAndForeignBytes) {
  auto good = sample(false);
  EXPECT_THROW(read_payload_header(std::span(good).first(10)), Corrupt);
  EXPECT_THROW(read_payload_header(std::span(good).first(good.size() - 1)), Corrupt);  // length disagrees
  auto foreign = good;
  foreign[5] = std::byte(200);  // unknown codec id
  EXPECT_THROW(read_payload_header(foreign), Corrupt);
  auto reserved = good;
  reserved[17] = std::byte(1);
  EXPECT_THROW(read_payload_header(reserved), Corrupt);
  try {
    auto magic = good;
    magic[0] = std::byte(0);
    read_payload_header(magic);
    FAIL();
  } catch (const Corrupt& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
  }
}

}  // namespace
}  // namespace braid::compress
