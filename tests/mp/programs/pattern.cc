#include <cstring>

#include "scenario.h"

namespace braid::testing {

namespace {

// A 64-bit xorshift stream seeded by (src, dst, salt): cheap enough to fill and verify 64 MiB
// messages, and different for every pair and size so misrouted bytes are caught.
std::uint64_t seed_of(int src, int dst, std::uint64_t salt) {
  std::uint64_t x = 0x9e3779b97f4a7c15ULL ^ (static_cast<std::uint64_t>(src) << 40) ^
                    (static_cast<std::uint64_t>(dst) << 20) ^ salt;
  return x == 0 ? 1 : x;
}

std::uint64_t next(std::uint64_t& x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

}  // namespace

void fill_pattern(std::uint8_t* data, std::size_t bytes, int src, int dst, std::uint64_t salt) {
  std::uint64_t x = seed_of(src, dst, salt);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t v = next(x);
    std::memcpy(data + i, &v, 8);
  }
  std::uint64_t v = next(x);
  for (; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(v >> (8 * (i % 8)));
}

long long first_pattern_error(const std::uint8_t* data, std::size_t bytes, int src, int dst, std::uint64_t salt) {
  std::uint64_t x = seed_of(src, dst, salt);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t v = next(x);
    if (std::memcmp(data + i, &v, 8) != 0) {
      for (std::size_t k = 0; k < 8; ++k) {
        if (data[i + k] != static_cast<std::uint8_t>(v >> (8 * k))) return static_cast<long long>(i + k);
      }
    }
  }
  std::uint64_t v = next(x);
  for (; i < bytes; ++i) {
    if (data[i] != static_cast<std::uint8_t>(v >> (8 * (i % 8)))) return static_cast<long long>(i);
  }
  return -1;
}

}  // namespace braid::testing
