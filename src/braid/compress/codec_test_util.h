// Test helpers shared by the codec tests: encode into a buffer of exactly max_encoded_bytes
// (checking that bound is the exact size), decode into a buffer pre-filled with a sentinel so
// that an element a decoder forgot to write shows up.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "braid/compress/codec.h"

namespace braid::compress::test_util {

inline constexpr float kSentinel = 12345.0f;

inline std::vector<std::byte> encode_exact(const Codec& codec, std::span<const float> x, Shape shape = {},
                                           EncodeOptions options = {}, std::span<float> decoded = {}) {
  std::vector<std::byte> out(codec.max_encoded_bytes(static_cast<std::int64_t>(x.size()), shape));
  std::size_t bytes = codec.encode(x, shape, options, out, decoded);
  EXPECT_EQ(bytes, out.size()) << "max_encoded_bytes must be the exact size";
  return out;
}

inline std::vector<float> decode(const Codec& codec, std::span<const std::byte> payload, std::size_t count) {
  std::vector<float> out(count, kSentinel);
  codec.decode(payload, out);
  return out;
}

}  // namespace braid::compress::test_util
