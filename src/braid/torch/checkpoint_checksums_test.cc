#include "braid/torch/checkpoint_checksums.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "braid/base/crc32c.h"

namespace braid::torch {
namespace {

std::string corrupt_message(const auto& fn) {
  try {
    fn();
  } catch (const Corrupt& e) {
    return e.what();
  }
  return "";
}

TEST(ChecksumTable, RoundTripsAndAcceptsIntactBytes) {
  std::vector<float> weights(1000, 0.5f);
  ChecksumTable table;
  table.add("model/param.fc1.weight", weights.data(), weights.size() * sizeof(float));
  table.add("position", "abc", 3);
  std::string text = table.encode();
  ChecksumTable back = ChecksumTable::decode(text, crc32c(text.data(), text.size()), {}, "ckpt/checkpoint.pt");
  EXPECT_NO_THROW(back.verify("model/param.fc1.weight", weights.data(), weights.size() * sizeof(float), {}, "f"));
  EXPECT_NO_THROW(back.verify("position", "abc", 3, {}, "f"));
}

TEST(ChecksumTable, AFlippedBitNamesTheFileAndTheTensor) {
  std::vector<std::uint8_t> bytes(4096, 7);
  ChecksumTable table;
  table.add("model/param.fc2.bias", bytes.data(), bytes.size());
  bytes[1234] ^= 0x10;
  std::string message = corrupt_message(
      [&] { table.verify("model/param.fc2.bias", bytes.data(), bytes.size(), {.rank = 1}, "d/checkpoint.pt"); });
  EXPECT_NE(message.find("d/checkpoint.pt: tensor 'model/param.fc2.bias' is damaged"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  EXPECT_NE(corrupt_message([&] { table.verify("unknown", bytes.data(), 1, {}, "f"); }).find("has no checksum"),
            std::string::npos);
}

TEST(ChecksumTable, ADamagedTableIsRefused) {
  ChecksumTable table;
  table.add("a", "x", 1);
  std::string text = table.encode();
  std::uint32_t crc = crc32c(text.data(), text.size());
  text[0] ^= 1;
  EXPECT_NE(corrupt_message([&] { ChecksumTable::decode(text, crc, {}, "f"); }).find("table of tensor checksums"),
            std::string::npos);
  std::string malformed = "zz a\n";
  std::uint32_t malformed_crc = crc32c(malformed.data(), malformed.size());
  EXPECT_NE(corrupt_message([&] { ChecksumTable::decode(malformed, malformed_crc, {}, "f"); }).find("malformed"),
            std::string::npos);
}

}  // namespace
}  // namespace braid::torch
