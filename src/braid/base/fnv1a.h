// FNV-1a, 64-bit: a digest every rank computes alike from the same values, where std::hash may
// differ between standard libraries. Used for agreements (GradSync's model signature, the seed
// of a compressed call) and for the digests benchmarks print beside their peers' (braid-bench's
// MoE count matrix, which bench/mpi/mpi_collectives.c hashes the same way in C).
#pragma once

#include <cstdint>
#include <string_view>

namespace braid {

class Fnv1a {
 public:
  void add_byte(std::uint8_t byte) { hash_ = (hash_ ^ byte) * kPrime; }
  // The value's 8 bytes, least significant first (the same digest on any byte order).
  void add(std::int64_t value) {
    for (int b = 0; b < 8; ++b) add_byte(static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * b)));
  }
  void add(std::string_view text) {
    for (char c : text) add_byte(static_cast<std::uint8_t>(c));
  }
  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ull;
  std::uint64_t hash_ = 0xcbf29ce484222325ull;  // the offset basis
};

}  // namespace braid
