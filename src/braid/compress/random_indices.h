// Random-k's index set, which every rank reproduces bit for bit from a shared seed, drawn from
// SplitMix64 (base/splitmix64.h).
//
// Why braid writes its own: random-k sends only values, and each receiver regenerates the
// indices from the header's seed, so the index set is part of the wire format. std::sample
// and std:: distributions are allowed to differ between standard libraries and versions; a
// rank decoding different coordinates would silently corrupt the model. Everything here is
// integer arithmetic, identical on every platform.
#pragma once

#include <cstdint>
#include <span>

namespace braid::compress {

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
