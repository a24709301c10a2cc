// Deterministic randomness that every rank reproduces bit for bit from a shared seed: the
// SplitMix64 generator and unbiased bounded integers drawn from it. (For unpredictable bytes,
// such as job tokens, see random.h.)
//
// Why braid writes its own: what is drawn from these is often part of an agreement between
// ranks (random-k's index set is part of its wire format, the sampler's permutation decides
// which rank trains on which sample), and std:: engines' distributions
// (uniform_int_distribution, std::shuffle) are allowed to differ between standard libraries
// and versions. Everything here is integer arithmetic, identical on every platform.
#pragma once

#include <cstdint>

namespace braid {

// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014; the
// reference code is Vigna's splitmix64.c): a 64-bit Weyl sequence passed through a bijective
// mixer. It passes BigCrush, has period 2^64, and any seed (0 included) is a good start, which
// matters because seeds here are step numbers or user values, not curated entropy.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // A uniform double in [0, 1) with 53 random bits (exact: no rounding happens).
  double next_unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }

 private:
  std::uint64_t state_;
};

// A uniform integer in [0, range), exactly uniform (Lemire, "Fast random integer generation in
// an interval", 2019: multiply-shift with rejection of the biased low products).
// REQUIRES: range >= 1.
std::uint64_t uniform_below(SplitMix64& rng, std::uint64_t range);

}  // namespace braid
