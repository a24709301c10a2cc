#include "braid/compress/topk_select.h"

#include <algorithm>
#include <array>
#include <functional>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/base/splitmix64.h"

namespace braid::compress {

namespace {

// |x|'s bit pattern: orders like |x|, with every NaN above +-Inf (topk_select.h, "Order").
inline std::uint32_t key_of(float value) { return std::bit_cast<std::uint32_t>(value) & 0x7fffffffu; }

// The three radix digits of a 31-bit key, most significant first.
struct Digit {
  int shift;
  int width;
};
constexpr Digit kDigits[3] = {{20, 11}, {9, 11}, {0, 9}};
constexpr int kTopBins = 1 << 11;

// The sampled bound (topk_select.h, step 1) is tried from this size on; below it the exact
// histogram costs little more than the sample.
constexpr std::size_t kSampleFrom = std::size_t{1} << 18;
constexpr std::size_t kSampleSize = 16384;

// Elements are scanned in blocks of 16: one SIMD comparison gives the block's mask of keys >=
// the bound, and only its set bits are visited (few: the bound sits near the top 1-10%).
constexpr std::size_t kScanBlock = 16;

// Bit l of the result is set iff key_of(x[l]) >= bound, for l < kScanBlock.
// REQUIRES: bound < 2^31 (keys are below 2^31 too, so signed compares are exact).
#if defined(__SSE2__)
std::uint32_t block_mask(const float* x, std::uint32_t bound) {
  // Intrinsics because GCC compiles the scalar loop below to a cmov chain, not SIMD.
  const __m128i limit = _mm_set1_epi32(static_cast<std::int32_t>(bound) - 1);
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  std::uint32_t mask = 0;
  for (std::size_t l = 0; l < kScanBlock; l += 4) {
    __m128i keys = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + l)), abs_mask);
    auto passed = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(keys, limit))));
    mask |= passed << l;
  }
  return mask;
}
#else
std::uint32_t block_mask(const float* x, std::uint32_t bound) {
  std::uint32_t mask = 0;
  for (std::size_t l = 0; l < kScanBlock; ++l) mask |= static_cast<std::uint32_t>(key_of(x[l]) >= bound) << l;
  return mask;
}
#endif

// Calls visit(i, key) for every element with key >= bound, in index order, until visit
// returns false. Returns false iff a visit did.
template <class Visit>
bool scan_at_least(std::span<const float> x, std::uint32_t bound, Visit visit) {
  std::size_t n = x.size();
  std::size_t i = 0;
  for (; i + kScanBlock <= n; i += kScanBlock) {
    for (std::uint32_t mask = block_mask(x.data() + i, bound); mask != 0; mask &= mask - 1) {
      std::size_t j = i + static_cast<std::size_t>(std::countr_zero(mask));
      if (!visit(j, key_of(x[j]))) return false;
    }
  }
  for (; i < n; ++i) {
    std::uint32_t key = key_of(x[i]);
    if (key >= bound && !visit(i, key)) return false;
  }
  return true;
}

// Where the need-th largest key falls in one digit's histogram: its bucket, and how many
// counted keys lie in higher buckets (all of them selected).
struct Bucket {
  std::uint32_t digit;
  std::int64_t above;
};

Bucket find_bucket(const std::uint32_t* histogram, int bins, std::int64_t need) {
  std::int64_t above = 0;
  for (int b = bins - 1; b > 0; --b) {
    if (above + histogram[b] >= need) return {static_cast<std::uint32_t>(b), above};
    above += histogram[b];
  }
  return {0, above};  // REQUIRES need <= total count, so bucket 0 holds the rest
}

// Histogram of the top digit of key_at(i), i < m, into histogram[0, kTopBins), counted in
// kHistogramCopies interleaved copies (topk_select.h says why) and then summed.
template <class KeyAt>
void count_top_digit(std::size_t m, KeyAt key_at, std::vector<std::uint32_t>& histogram) {
  constexpr std::size_t kCopies = TopkSelector::kHistogramCopies;
  constexpr std::size_t kStride = TopkSelector::kHistogramStride;
  histogram.assign(kCopies * kStride, 0);
  std::uint32_t* h = histogram.data();
  std::size_t i = 0;
  for (; i + kCopies <= m; i += kCopies) {
    for (std::size_t c = 0; c < kCopies; ++c) ++h[c * kStride + (key_at(i + c) >> 20)];
  }
  for (; i < m; ++i) ++h[key_at(i) >> 20];
  for (std::size_t c = 1; c < kCopies; ++c) {
    for (int b = 0; b < kTopBins; ++b) h[b] += h[c * kStride + b];
  }
}

// Resolves the digits from `level` on, among the m elements whose key_at(i) has `prefix` as
// its digits above `level`, need (>= 1) of which are still to be selected.
template <class KeyAt>
TopkThreshold refine(std::size_t m, KeyAt key_at, std::uint32_t prefix, std::int64_t need, int level) {
  std::array<std::uint32_t, kTopBins> histogram;
  for (; level < 3; ++level) {
    auto [shift, width] = kDigits[level];
    int high = shift + width;
    std::uint32_t mask = (1u << width) - 1;
    std::fill_n(histogram.begin(), 1u << width, 0u);
    for (std::size_t i = 0; i < m; ++i) {
      std::uint32_t key = key_at(i);
      if ((key >> high) == prefix) ++histogram[(key >> shift) & mask];
    }
    Bucket bucket = find_bucket(histogram.data(), 1 << width, need);
    need -= bucket.above;
    prefix = (prefix << width) | bucket.digit;
  }
  return {prefix, need};
}

}  // namespace

void TopkSelector::select(std::span<const float> x, std::int64_t k, std::span<std::uint32_t> indices) {
  auto n = static_cast<std::int64_t>(x.size());
  if (x.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument({.op = "topk"}, fmt::format("{} elements do not fit 32-bit indices", x.size()));
  }
  if (k < 0 || k > n) throw InvalidArgument({.op = "topk"}, fmt::format("k = {} is outside [0, n = {}]", k, n));
  BRAID_CHECK_EQ(indices.size(), k, InvalidArgument, {.op = "topk"}, "indices in the output");
  if (k == 0) return;
  if (k == n) {
    std::iota(indices.begin(), indices.end(), 0u);
    return;
  }
  if (x.size() >= kSampleFrom) {
    if (auto bound = sampled_bound(x, k); bound && collect(x, bound->key, bound->capacity)) {
      if (static_cast<std::int64_t>(candidate_keys_.size()) >= k) {
        emit(resolve(k), indices);
        return;
      }
    }
  }
  select_exactly(x, k, indices);
}

std::optional<TopkSelector::SampledBound> TopkSelector::sampled_bound(std::span<const float> x, std::int64_t k) {
  // The rank-th largest of kSampleSize keys taken one per stride (at a pseudo-random offset
  // inside it, so periodic data does not alias), with rank = expected + 4 sigma + 8: if fewer
  // than k keys of x were >= it, the sample would have had to land > 4 sigma high. About
  // n * rank / kSampleSize keys are >= it; twice that is the candidate buffer's capacity.
  double expected = static_cast<double>(k) * static_cast<double>(kSampleSize) / static_cast<double>(x.size());
  auto rank = static_cast<std::size_t>(std::ceil(expected + 4.0 * std::sqrt(expected) + 8.0));
  if (rank >= kSampleSize / 2) return std::nullopt;  // k near n/2 or above: the exact path is as fast
  scratch_keys_.resize(kSampleSize);
  std::size_t stride = x.size() / kSampleSize;
  SplitMix64 rng(0x70b6c0ffeeull);  // fixed: the bound only affects speed, never the result
  for (std::size_t s = 0; s < kSampleSize; ++s) {
    scratch_keys_[s] = key_of(x[s * stride + uniform_below(rng, stride)]);
  }
  auto nth = scratch_keys_.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(scratch_keys_.begin(), nth, scratch_keys_.end(), std::greater<>());
  auto capacity = static_cast<std::int64_t>(2 * (x.size() / kSampleSize + 1) * rank + 4096);
  return SampledBound{*nth, capacity};
}

bool TopkSelector::collect(std::span<const float> x, std::uint32_t bound, std::int64_t capacity) {
  // reserve, not resize: only the pages the candidates land on are touched.
  auto limit = static_cast<std::size_t>(capacity);
  candidate_keys_.clear();
  candidate_indices_.clear();
  candidate_keys_.reserve(limit);
  candidate_indices_.reserve(limit);
  return scan_at_least(x, bound, [&](std::size_t i, std::uint32_t key) {
    if (candidate_keys_.size() == limit) return false;
    candidate_keys_.push_back(key);
    candidate_indices_.push_back(static_cast<std::uint32_t>(i));
    return true;
  });
}

TopkThreshold TopkSelector::resolve(std::int64_t need) {
  // Top digit over all candidates; the lower two over the threshold bucket's keys alone.
  const std::uint32_t* all = candidate_keys_.data();
  count_top_digit(candidate_keys_.size(), [all](std::size_t i) { return all[i]; }, histogram_);
  Bucket bucket = find_bucket(histogram_.data(), kTopBins, need);
  scratch_keys_.clear();
  for (std::uint32_t key : candidate_keys_) {
    if ((key >> 20) == bucket.digit) scratch_keys_.push_back(key);
  }
  const std::uint32_t* keys = scratch_keys_.data();
  return refine(scratch_keys_.size(), [keys](std::size_t i) { return keys[i]; }, bucket.digit,
                need - bucket.above, 1);
}

void TopkSelector::emit(TopkThreshold t, std::span<std::uint32_t> indices) const {
  std::size_t pos = 0;
  for (std::size_t c = 0; c < candidate_keys_.size(); ++c) {
    std::uint32_t key = candidate_keys_[c];
    if (key > t.key || (key == t.key && t.ties-- > 0)) indices[pos++] = candidate_indices_[c];
  }
}

void TopkSelector::select_exactly(std::span<const float> x, std::int64_t k, std::span<std::uint32_t> indices) {
  count_top_digit(x.size(), [&](std::size_t i) { return key_of(x[i]); }, histogram_);
  const std::uint32_t* h = histogram_.data();
  Bucket bucket = find_bucket(h, kTopBins, k);
  std::uint32_t bucket_low = bucket.digit << 20;  // the smallest key in the threshold bucket

  if (h[bucket.digit] <= x.size() / 8 + 1024) {
    collect(x, bucket_low, bucket.above + h[bucket.digit]);  // exactly this many: always fits
    emit(resolve(k), indices);
    return;
  }
  // A large threshold bucket (e.g. a mostly-zero gradient): resolve the lower digits over x
  // itself rather than copying the bucket, then emit in one more pass.
  TopkThreshold t = refine(x.size(), [&](std::size_t j) { return key_of(x[j]); }, bucket.digit, k - bucket.above, 1);
  std::size_t pos = 0;
  scan_at_least(x, t.key, [&](std::size_t j, std::uint32_t key) {
    if (key > t.key || t.ties-- > 0) indices[pos++] = static_cast<std::uint32_t>(j);
    return true;
  });
}

void select_topk(std::span<const float> x, std::int64_t k, std::span<std::uint32_t> indices) {
  TopkSelector selector;
  selector.select(x, k, indices);
}

}  // namespace braid::compress
