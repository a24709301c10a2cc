// Deterministic randomness that every rank reproduces bit for bit from a shared seed: the
// generator (SplitMix64), unbiased bounded integers, and random-k's index set.
//
// Why braid writes its own: random-k sends only values, and each receiver regenerates the
// indices from the header's seed, so the index set is part of the wire format. std::
// distributions (uniform_int_distribution, normal_distribution, sample) are allowed to differ
// between standard libraries and versions, and libm's log/sin may differ between glibc builds
// and their FMA/non-FMA variants; a rank decoding different coordinates would silently corrupt
// the model. Everything here is integer arithmetic, identical on every platform.
#pragma once

#include <cstdint>
#include <span>

namespace braid::compress {

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

// The factor random-k multiplies its k kept values by so that decode(encode(x)) is an
// unbiased estimate of x: each index is kept with probability k/n, so E[decoded_i] =
// (k/n) * x_i * scale = x_i with scale = n/k. Defined once, as one exact expression (n/k
// rounded once in double, then once to float), so every encoder and the compressed allreduce
// agree on the bits. REQUIRES: 1 <= k <= n.
float randomk_scale(std::int64_t n, std::int64_t k);

// Writes to out (out.size() == k) k distinct indices in [0, n), in ascending order, a pure
// function of (seed, n, k): every k-subset is equally likely, so each index is kept with
// probability exactly k/n.
//
// Algorithm: Floyd's sampling (Bentley & Floyd, "A sample of brilliance", CACM 1987): for
// j = n-k .. n-1 draw t uniform in [0, j]; add t, or j if t is already in the set. k draws,
// no rejection loop on collisions, uniform over k-subsets. The set is then listed in
// ascending order. Membership is a bitmap of n bits when k is at least n/1024 (then the
// bitmap's n/8 bytes are within 128x of the k*4 output and one linear scan lists it: n = 16M,
// k = 1% takes about a millisecond), else an open-addressing hash set and a sort of the k
// indices. Both structures give the same set, because the set is defined by the draws alone.
//
// Throws braid::InvalidArgument unless 0 <= k <= n < 2^32 and out.size() == k.
void draw_random_indices(std::uint64_t seed, std::int64_t n, std::int64_t k, std::span<std::uint32_t> out);

namespace internal {
// The two membership structures of draw_random_indices, exposed so a test can check they
// agree on inputs where the public function would pick only one of them.
void draw_random_indices_bitmap(std::uint64_t seed, std::uint32_t n, std::uint32_t k, std::span<std::uint32_t> out);
void draw_random_indices_hashed(std::uint64_t seed, std::uint32_t n, std::uint32_t k, std::span<std::uint32_t> out);
}  // namespace internal

}  // namespace braid::compress
