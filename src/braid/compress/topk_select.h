// Exact top-k selection by magnitude: the indices of the k elements of largest |x|, in
// ascending order, without sorting (top-k's encoder; the compressed allreduce reuses it).
//
// Order. Elements are ranked by the bit pattern of |x| read as an unsigned integer (the
// "key"), which for IEEE floats orders exactly like |x| and extends it to NaN: every NaN ranks
// above +-Inf, so a NaN is always transmitted rather than silently dropped (the receiver then
// sees it; see codec.h on non-finite values). Among NaNs the larger payload ranks first. -0
// and +0 are equal. Ties are broken by index, lowest first, so the selected set is a pure
// function of (x, k): every rank, run and ISA picks the same elements, whichever of the paths
// below ran.
//
// Algorithm: radix select on the 31 key bits (MSD digits of 11, 11 and 9 bits), over a
// candidate set gathered in one pass.
//   1. Bound: the keys of 16384 elements sampled one per stride give a key L that at least k
//      elements reach unless the sample was > 4 sigma off, and not many more (about 1.1k for
//      ratio 0.1, 1.3k for 0.01, 2.5k for 0.001).
//   2. Collect: one pass over x (16 elements per SIMD compare) copies the (key, index) of
//      every element with key >= L, in index order.
//   3. Resolve: digit histograms over the candidates (the top digit over all of them, the two
//      lower ones over the threshold bucket alone) give the exact threshold key T and how many
//      elements equal to T are taken; the candidates passing it, listed in order, are the
//      answer.
// If step 1 or 2 fails (fewer than k reach L, or more than the buffer holds: possible only
// for odd data, and it only costs time), or for n < 2^18, the bound is made exact instead: a
// histogram of the top digit over all of x finds the threshold bucket, whose lowest key is L.
// If that bucket alone holds more than n/8 elements (a gradient of mostly zeros), the lower
// digits are counted over x itself and a final pass emits the answer, so no buffer grows
// beyond about k + n/8 pairs.
// n = 16M, k = 1%: about 1.1 passes over the 64 MiB; bench/compress/topk_bench.cc compares it
// with std::nth_element.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace braid::compress {

// Select every key > key, and the first `ties` (lowest-indexed) keys == key.
struct TopkThreshold {
  std::uint32_t key;
  std::int64_t ties;
};

// Reusable scratch for select_topk: repeated selections (one per tensor per step) allocate
// nothing once the candidate buffers have grown to their working size.
// Not thread-safe: one selector per thread.
class TopkSelector {
 public:
  // Writes to indices the k indices of the largest keys (see the header comment), ascending.
  // k == 0 writes nothing; k == n writes 0..n-1.
  // Throws braid::InvalidArgument unless 0 <= k <= x.size(), x.size() < 2^32 and
  // indices.size() == k.
  void select(std::span<const float> x, std::int64_t k, std::span<std::uint32_t> indices);

  // The top-digit histogram's layout (topk_select.cc, count_top_digit): 8 interleaved copies
  // (element i counts in copy i mod 8). With one counter array, successive increments wait on
  // each other's stores (gradients cluster in a few binades, so successive buckets often
  // repeat), and the CPU's memory-dependence prediction stalls even when they do not: 8 copies
  // measured 5x faster than 1 or 4 on this machine's AMD EPYC. Copies are padded by a cache
  // line so that equal buckets of different copies are not 4 KiB apart.
  static constexpr std::size_t kHistogramCopies = 8;
  static constexpr std::size_t kHistogramStride = 2048 + 16;

 private:
  struct SampledBound {
    std::uint32_t key;
    std::int64_t capacity;  // candidate buffer size: about twice the expected number >= key
  };
  std::optional<SampledBound> sampled_bound(std::span<const float> x, std::int64_t k);
  // Gathers the candidates (key >= bound); false, and a partial set, if more than capacity.
  bool collect(std::span<const float> x, std::uint32_t bound, std::int64_t capacity);
  // The threshold of the top `need` candidates.
  TopkThreshold resolve(std::int64_t need);
  // Writes the candidates passing t, in index order.
  void emit(TopkThreshold t, std::span<std::uint32_t> indices) const;
  // The path without sampling (header comment, last paragraph).
  void select_exactly(std::span<const float> x, std::int64_t k, std::span<std::uint32_t> indices);

  std::vector<std::uint32_t> histogram_;          // kHistogramCopies x kHistogramStride
  std::vector<std::uint32_t> candidate_keys_;     // in index order
  std::vector<std::uint32_t> candidate_indices_;  // ascending
  std::vector<std::uint32_t> scratch_keys_;       // the sample; then the threshold bucket's keys
};

// One-shot form of TopkSelector::select (allocates its scratch).
void select_topk(std::span<const float> x, std::int64_t k, std::span<std::uint32_t> indices);

}  // namespace braid::compress
