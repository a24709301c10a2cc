// The sparsifying codecs and their math: top-k selection, random-k's index sets, and the topk
// and randomk codecs against codec.h's contract.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"
#include "braid/compress/codec.h"
#include "braid/compress/codec_test_util.h"
#include "braid/compress/payload_header.h"
#include "braid/compress/random_indices.h"
#include "braid/compress/topk_select.h"

namespace braid::compress {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// --- helpers ---------------------------------------------------------------------------------

// Values with many exact ties (a handful of magnitudes, both signs, both zeros), occasional
// NaNs with different payloads and infinities: the cases where a selection can go wrong.
std::vector<float> tricky_values(std::size_t n, std::uint64_t seed) {
  static const float kPool[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 3.0f, 1e-30f, -1e-30f, 1e30f};
  SplitMix64 rng(seed);
  std::vector<float> x(n);
  for (float& v : x) {
    std::uint64_t r = uniform_below(rng, 1000);
    if (r < 500) {
      v = kPool[r % std::size(kPool)];
    } else if (r < 995) {
      v = static_cast<float>(rng.next_unit() * 4.0 - 2.0);
    } else if (r < 997) {
      v = std::bit_cast<float>(static_cast<std::uint32_t>(0x7fc00000u | r | ((r & 1) << 31)));  // NaNs, both signs
    } else {
      v = r & 1 ? kInf : -kInf;
    }
  }
  return x;
}

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(rng.next_unit() * 2.0 - 1.0);
  return x;
}

// The specification of select_topk, by sorting: keys descending, index ascending on ties.
std::vector<std::uint32_t> brute_force_topk(const std::vector<float>& x, std::int64_t k) {
  std::vector<std::uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  auto key = [&](std::uint32_t i) { return std::bit_cast<std::uint32_t>(x[i]) & 0x7fffffffu; };
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) > key(b); });
  order.resize(static_cast<std::size_t>(k));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<std::uint32_t> topk(const std::vector<float>& x, std::int64_t k) {
  std::vector<std::uint32_t> indices(static_cast<std::size_t>(k));
  select_topk(x, k, indices);
  return indices;
}

std::vector<std::byte> encode(const Codec& codec, std::span<const float> x, EncodeOptions options = {}) {
  return test_util::encode_exact(codec, x, {}, options);
}

using test_util::decode;  // overwrite mode must replace every sentinel element

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

template <typename T>
void poke(std::vector<std::byte>& payload, std::size_t offset, T value) {
  std::memcpy(payload.data() + offset, &value, sizeof(T));
}
template <typename T>
T peek(const std::vector<std::byte>& payload, std::size_t offset) {
  T value;
  std::memcpy(&value, payload.data() + offset, sizeof(T));
  return value;
}

// Header offsets (payload_header.h).
constexpr std::size_t kBlockOffset = 20;
constexpr std::size_t kAuxOffset = 24;
constexpr std::size_t kSeedOffset = 32;
constexpr std::size_t kPayloadBytesOffset = 40;

// Rewrites the header's k and body length consistently after the body was resized.
void set_k(std::vector<std::byte>& payload, std::uint64_t k) { poke<std::uint64_t>(payload, kAuxOffset, k); }
void set_body_bytes(std::vector<std::byte>& payload, std::size_t body_bytes) {
  payload.resize(kPayloadHeaderBytes + body_bytes);
  poke<std::uint64_t>(payload, kPayloadBytesOffset, body_bytes);
}

std::unique_ptr<Codec> topk_codec(double ratio) { return make_codec({.id = CodecId::kTopK, .ratio = ratio}); }
std::unique_ptr<Codec> randomk_codec(double ratio) { return make_codec({.id = CodecId::kRandomK, .ratio = ratio}); }

// --- select_topk -----------------------------------------------------------------------------

TEST(TopKSelectTest, MatchesBruteForceWithTiesNaNsAndInfinities) {
  // Sizes below and above the sampled path's threshold (2^18), none a multiple of the scan
  // block; k from 1 to n - 1.
  for (std::size_t n : {1u, 2u, 15u, 17u, 100u, 1000u, 4099u, (1u << 18) + 3}) {
    auto x = tricky_values(n, n);
    for (std::int64_t k : {std::int64_t{1}, std::int64_t{2}, static_cast<std::int64_t>(n / 100),
                           static_cast<std::int64_t>(n / 10), static_cast<std::int64_t>(n / 2),
                           static_cast<std::int64_t>(n) - 1}) {
      if (k < 1 || k >= static_cast<std::int64_t>(n)) continue;
      EXPECT_EQ(topk(x, k), brute_force_topk(x, k)) << "n " << n << " k " << k;
    }
  }
}

TEST(TopKSelectTest, MatchesBruteForceOnGradientLikeData) {
  // Smooth data on the sampled path (n >= 2^18): the common case in training.
  const std::size_t n = (1u << 19) + 5;
  auto x = random_values(n, 3);
  for (std::size_t i = 0; i < n; ++i) x[i] *= static_cast<float>(1 + i % 7) * 1e-3f;
  for (double ratio : {0.001, 0.01, 0.1, 0.4}) {
    std::int64_t k = selected_count(ratio, static_cast<std::int64_t>(n));
    EXPECT_EQ(topk(x, k), brute_force_topk(x, k)) << "ratio " << ratio;
  }
}

TEST(TopKSelectTest, MostlyZeroGradientsTakeTheLowestIndexedZeros) {
  // More zeros than n - k: the threshold is 0 and its bucket holds almost all of x, the path
  // that resolves digits over x itself.
  const std::size_t n = (1u << 18) + 9;
  std::vector<float> x(n, 0.0f);
  for (std::size_t i = 0; i < n; i += 97) x[i] = static_cast<float>(i % 5) - 2.0f;
  for (std::size_t i = 1; i < n; i += 2) x[i] = -0.0f;
  for (std::int64_t k : {std::int64_t{100}, std::int64_t{5000}, static_cast<std::int64_t>(n / 3)}) {
    EXPECT_EQ(topk(x, k), brute_force_topk(x, k)) << "k " << k;
  }
  auto small = std::vector<float>(1000, 0.0f);
  EXPECT_EQ(topk(small, 10), brute_force_topk(small, 10));
}

TEST(TopKSelectTest, NaNRanksAboveInfinityAndTiesGoToTheLowestIndex) {
  std::vector<float> x = {1.0f, kInf, -kInf, kNaN, 2.0f, -2.0f, 2.0f};
  EXPECT_EQ(topk(x, 1), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(topk(x, 2), (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(topk(x, 3), (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(topk(x, 4), (std::vector<std::uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(topk(x, 5), (std::vector<std::uint32_t>{1, 2, 3, 4, 5}));
  std::vector<float> equal(50, -0.25f);
  EXPECT_EQ(topk(equal, 3), (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(TopKSelectTest, EdgeCounts) {
  EXPECT_TRUE(topk({}, 0).empty());
  auto x = random_values(37, 1);
  EXPECT_TRUE(topk(x, 0).empty());
  std::vector<std::uint32_t> all(37);
  std::iota(all.begin(), all.end(), 0u);
  EXPECT_EQ(topk(x, 37), all);
  EXPECT_EQ(topk({-5.0f}, 1), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(topk({1.0f, -3.0f}, 1), (std::vector<std::uint32_t>{1}));
}

TEST(TopKSelectTest, RefusesBadArguments) {
  auto x = random_values(10, 1);
  std::vector<std::uint32_t> out(11);
  EXPECT_THROW(select_topk(x, 11, out), InvalidArgument);
  EXPECT_THROW(select_topk(x, -1, std::span<std::uint32_t>()), InvalidArgument);
  EXPECT_THROW(select_topk(x, 3, std::span<std::uint32_t>(out).first(2)), InvalidArgument);
}

TEST(TopKSelectTest, AReusedSelectorGivesTheSameAnswers) {
  TopkSelector selector;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    std::size_t n = seed % 2 ? (1u << 18) + 100 : 5000;
    auto x = tricky_values(n, seed);
    std::int64_t k = static_cast<std::int64_t>(n / (seed + 3));
    std::vector<std::uint32_t> indices(static_cast<std::size_t>(k));
    selector.select(x, k, indices);
    EXPECT_EQ(indices, brute_force_topk(x, k)) << "seed " << seed;
  }
}

// --- random indices --------------------------------------------------------------------------

TEST(RandomKIndicesTest, DrawsArePinned) {
  // Random-k's indices are part of its wire format (receivers regenerate them): a change to
  // the generator, the bounded draw or Floyd's loop must show up here, not as ranks of
  // different braid versions silently decoding different coordinates.
  std::vector<std::uint32_t> bitmap_path(6), hashed_path(4);
  draw_random_indices(42, 1000, 6, bitmap_path);
  draw_random_indices(42, 1 << 22, 4, hashed_path);
  EXPECT_EQ(bitmap_path, (std::vector<std::uint32_t>{37, 159, 277, 343, 737, 868}));
  EXPECT_EQ(hashed_path, (std::vector<std::uint32_t>{670712, 1168537, 1443640, 3110346}));
}

TEST(RandomKIndicesTest, DistinctAscendingAndInRange) {
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {10, 0}, {10, 10}, {1000, 1}, {1000, 999},
                      {100000, 50}, {1 << 20, 10000}}) {
    std::vector<std::uint32_t> out(static_cast<std::size_t>(k));
    draw_random_indices(7, n, k, out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_LT(out[i], n);
      if (i > 0) {
        ASSERT_LT(out[i - 1], out[i]) << "n " << n << " k " << k;
      }
    }
    if (k == n) {
      EXPECT_EQ(out.back(), n - 1);
    }
  }
}

TEST(RandomKIndicesTest, SameSeedSameIndicesDifferentSeedDifferentIndices) {
  std::vector<std::uint32_t> a(500), b(500), c(500);
  draw_random_indices(1234, 1 << 16, 500, a);
  draw_random_indices(1234, 1 << 16, 500, b);
  draw_random_indices(1235, 1 << 16, 500, c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(RandomKIndicesTest, BitmapAndHashSetDrawTheSameSet) {
  for (auto [n, k] : {std::pair<std::uint32_t, std::uint32_t>{1, 1}, {64, 5}, {1000, 999}, {1 << 20, 100},
                      {1 << 20, 4096}, {3000001, 2999}}) {
    for (std::uint64_t seed : {0ull, 99ull}) {
      std::vector<std::uint32_t> bitmap(k), hashed(k);
      internal::draw_random_indices_bitmap(seed, n, k, bitmap);
      internal::draw_random_indices_hashed(seed, n, k, hashed);
      EXPECT_EQ(bitmap, hashed) << "n " << n << " k " << k;
    }
  }
}

TEST(RandomKIndicesTest, EveryThreeSubsetOfTenIsEquallyLikely) {
  // 120 subsets, 36000 draws: 300 expected each. Pearson's statistic has 119 degrees of
  // freedom (mean 119, sd sqrt(238) = 15.4); 200 is 5.2 sd above the mean, so a uniform
  // sampler fails this with probability < 1e-6 while a biased one (e.g. a modulo-biased
  // bounded draw, or a sampler favouring high indices) lands far beyond it.
  std::map<std::vector<std::uint32_t>, int> counts;
  const int draws = 36000;
  std::vector<int> per_index(10, 0);
  for (int seed = 0; seed < draws; ++seed) {
    std::vector<std::uint32_t> out(3);
    draw_random_indices(static_cast<std::uint64_t>(seed), 10, 3, out);
    ++counts[out];
    for (auto i : out) ++per_index[i];
  }
  EXPECT_EQ(counts.size(), 120u);
  double chi2 = 0.0;
  for (const auto& [subset, count] : counts) chi2 += (count - 300.0) * (count - 300.0) / 300.0;
  EXPECT_LT(chi2, 200.0);
  // Each index: 10800 expected, sd sqrt(36000 * 0.3 * 0.7) = 87; 5 sd = 435.
  for (int c : per_index) EXPECT_NEAR(c, 10800, 435);
}

TEST(RandomKIndicesTest, RefusesBadArguments) {
  std::vector<std::uint32_t> out(4);
  EXPECT_THROW(draw_random_indices(1, 3, 4, out), InvalidArgument);
  EXPECT_THROW(draw_random_indices(1, 10, 3, out), InvalidArgument);
  EXPECT_THROW(draw_random_indices(1, std::int64_t{1} << 32, 4, out), InvalidArgument);
  EXPECT_THROW(draw_random_indices(1, 10, -1, out), InvalidArgument);
}

TEST(RandomKIndicesTest, ScaleIsNOverKRoundedOnce) {
  EXPECT_EQ(randomk_scale(64, 16), 4.0f);
  EXPECT_EQ(randomk_scale(100, 3), static_cast<float>(100.0 / 3.0));
  EXPECT_EQ(randomk_scale(7, 7), 1.0f);
}

// --- topk codec ------------------------------------------------------------------------------

TEST(TopKCodecTest, KeepsExactlyTheKLargestAndZeroesTheRest) {
  auto x = tricky_values(3001, 11);
  auto codec = topk_codec(0.05);
  auto payload = encode(*codec, x);
  std::int64_t k = selected_count(0.05, 3001);
  PayloadHeader header = read_payload_header(payload);
  EXPECT_EQ(header.codec, CodecId::kTopK);
  EXPECT_EQ(header.aux, static_cast<std::uint64_t>(k));
  EXPECT_EQ(payload.size(), kPayloadHeaderBytes + static_cast<std::size_t>(k) * 8);
  auto out = decode(*codec, payload, x.size());
  auto kept = brute_force_topk(x, k);
  std::vector<float> expected(x.size(), 0.0f);
  for (auto i : kept) expected[i] = x[i];
  EXPECT_TRUE(same_bits(out, expected));  // NaN payloads and -0 included
  for (std::size_t j = 0; j < kept.size(); ++j) EXPECT_EQ(peek<std::uint32_t>(payload, kPayloadHeaderBytes + 4 * j), kept[j]);
}

TEST(TopKCodecTest, SizesAndEdgeCounts) {
  for (std::size_t n : {0u, 1u, 2u, 7u, 1000u, (1u << 18) + 5}) {
    for (double ratio : {0.001, 0.3, 1.0}) {
      auto codec = topk_codec(ratio);
      auto x = random_values(n, n);
      auto payload = encode(*codec, x);  // checks max_encoded_bytes == size
      std::int64_t k = selected_count(ratio, static_cast<std::int64_t>(n));
      EXPECT_EQ(payload.size(), kPayloadHeaderBytes + static_cast<std::size_t>(k) * 8);
      auto out = decode(*codec, payload, n);
      if (ratio == 1.0) {
        EXPECT_TRUE(same_bits(out, x));
      }
    }
  }
  EXPECT_THROW(topk_codec(0.1)->max_encoded_bytes(std::int64_t{1} << 32, {}), InvalidArgument);
}

TEST(TopKCodecTest, DecodedOutputEqualsDecodeBitForBit) {
  auto x = tricky_values(5000, 4);
  auto codec = topk_codec(0.2);
  std::vector<float> decoded(x.size(), 7.0f);
  std::vector<std::byte> payload(codec->max_encoded_bytes(5000, {}));
  codec->encode(x, {}, {}, payload, decoded);
  EXPECT_TRUE(same_bits(decoded, decode(*codec, payload, x.size())));
  std::vector<float> via_header(x.size());
  decode_payload(payload, via_header);  // the receiver's path: k from the header alone
  EXPECT_TRUE(same_bits(via_header, decoded));
}

TEST(TopKCodecTest, AccumulateAddsOnlyAtTheKeptIndices) {
  auto x = random_values(1000, 8);
  auto codec = topk_codec(0.1);
  auto payload = encode(*codec, x);
  auto decoded = decode(*codec, payload, x.size());
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(i) * 0.5f;
  auto before = out;
  codec->decode(payload, out, DecodeMode::kAccumulate);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], before[i] + decoded[i]) << i;
}

TEST(TopKCodecTest, NonFiniteValuesTravelOrRaise) {
  std::vector<float> x(100, 0.01f);
  x[10] = kNaN;
  x[20] = -kInf;
  auto codec = topk_codec(0.02);  // k = 2: exactly the two non-finite values
  auto out = decode(*codec, encode(*codec, x), x.size());
  EXPECT_TRUE(std::isnan(out[10]));
  EXPECT_EQ(out[20], -kInf);
  EXPECT_THROW(encode(*codec, x, {.non_finite = NonFinitePolicy::kRaise}), InvalidArgument);
}

TEST(TopKCodecTest, TamperedPayloadsAreCorruptAndLeaveTheOutputAlone) {
  auto x = random_values(400, 2);
  auto codec = topk_codec(0.05);  // k = 20
  const auto good = encode(*codec, x);
  const std::size_t k = 20;
  auto index_at = [](std::size_t j) { return kPayloadHeaderBytes + 4 * j; };
  auto expect_corrupt = [&](const std::vector<std::byte>& bad, const char* what) {
    std::vector<float> out(x.size(), 1.0f);
    EXPECT_THROW(codec->decode(bad, out, DecodeMode::kAccumulate), Corrupt) << what;
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 1.0f; })) << what;
  };
  auto bad = good;
  poke<std::uint32_t>(bad, index_at(k - 1), 400);
  expect_corrupt(bad, "index == count");
  bad = good;
  poke<std::uint32_t>(bad, index_at(k - 1), 0xffffffffu);
  expect_corrupt(bad, "index far out of range");
  bad = good;
  poke<std::uint32_t>(bad, index_at(3), peek<std::uint32_t>(bad, index_at(2)));
  expect_corrupt(bad, "repeated index");
  bad = good;
  auto second = peek<std::uint32_t>(bad, index_at(1));
  poke<std::uint32_t>(bad, index_at(1), peek<std::uint32_t>(bad, index_at(2)));
  poke<std::uint32_t>(bad, index_at(2), second);
  expect_corrupt(bad, "swapped indices");
  bad = good;
  set_k(bad, k + 1);
  expect_corrupt(bad, "k larger than the body");
  bad = good;
  set_k(bad, k - 1);
  expect_corrupt(bad, "k smaller than the body");
  bad = good;
  set_k(bad, 401);
  set_body_bytes(bad, 401 * 8);
  expect_corrupt(bad, "k above the count");
  bad = good;
  bad.pop_back();
  expect_corrupt(bad, "truncated");
  bad = good;
  set_body_bytes(bad, k * 8 - 4);
  expect_corrupt(bad, "body shorter than 8k");
  bad = good;
  poke<std::uint32_t>(bad, kBlockOffset, 1);
  expect_corrupt(bad, "block field set");
  bad = good;
  poke<std::uint64_t>(bad, kSeedOffset, 1);
  expect_corrupt(bad, "seed field set");
  expect_corrupt(encode(*randomk_codec(0.05), x), "a randomk payload");
}

TEST(TopKCodecTest, ChecksumCatchesAFlippedValueAndWrongLengthIsInvalid) {
  auto x = random_values(300, 6);
  auto codec = topk_codec(0.1);
  auto payload = encode(*codec, x, {.checksum = true});
  EXPECT_NO_THROW(decode(*codec, payload, x.size()));
  payload[payload.size() - 3] ^= std::byte{0x10};  // inside the last value
  std::vector<float> out(x.size());
  EXPECT_THROW(codec->decode(payload, out), Corrupt);
  auto plain = encode(*codec, x);
  std::vector<float> wrong(x.size() + 1);
  EXPECT_THROW(codec->decode(plain, wrong), InvalidArgument);
  std::vector<float> short_decoded(x.size() - 1);
  EXPECT_THROW(codec->encode(x, {}, {}, plain, short_decoded), InvalidArgument);
}

// --- randomk codec ---------------------------------------------------------------------------

TEST(RandomKCodecTest, SendsTheSeedsCoordinatesScaledByNOverK) {
  auto x = random_values(1000, 3);
  auto codec = randomk_codec(0.03);  // k = 30
  auto payload = encode(*codec, x, {.seed = 77});
  PayloadHeader header = read_payload_header(payload);
  EXPECT_EQ(header.aux, 30u);
  EXPECT_EQ(header.seed, 77u);
  EXPECT_EQ(payload.size(), kPayloadHeaderBytes + 30 * sizeof(float));
  std::vector<std::uint32_t> indices(30);
  draw_random_indices(77, 1000, 30, indices);
  std::vector<float> expected(x.size(), 0.0f);
  for (auto i : indices) expected[i] = x[i] * randomk_scale(1000, 30);
  auto out = decode(*codec, payload, x.size());
  EXPECT_TRUE(same_bits(out, expected));
  std::vector<float> via_header(x.size());
  decode_payload(payload, via_header);
  EXPECT_TRUE(same_bits(via_header, expected));
}

TEST(RandomKCodecTest, SameSeedSamePayloadDifferentSeedDifferentCoordinates) {
  auto x = random_values(2000, 4);
  auto codec = randomk_codec(0.01);
  EXPECT_EQ(encode(*codec, x, {.seed = 5}), encode(*codec, x, {.seed = 5}));
  auto a = decode(*codec, encode(*codec, x, {.seed = 5}), x.size());
  auto b = decode(*codec, encode(*codec, x, {.seed = 6}), x.size());
  EXPECT_FALSE(same_bits(a, b));
}

TEST(RandomKCodecTest, MeanOfManySeedsConvergesToTheInput) {
  // n = 64, k = 16, scale 4 exactly: decoded_i = 4 x_i B_i with B_i ~ Bernoulli(p = 1/4), so
  // E[decoded_i] = x_i exactly and the mean of T independent seeds has standard deviation
  // |x_i| sqrt((1 - p) / (p T)) = 0.0122 |x_i| for T = 20000. With T p = 5000 expected hits
  // the normal approximation is accurate; a 5 sd bound fails by chance with probability
  // < 64 * 6e-7 over the 64 elements. A biased index draw (p_i != 1/4) or a wrong scale of
  // even 7% lands outside it.
  const std::size_t n = 64;
  const int trials = 20000;
  std::vector<float> x(n);
  SplitMix64 rng(1);
  for (float& v : x) v = static_cast<float>((0.5 + 1.5 * rng.next_unit()) * (rng.next() & 1 ? 1 : -1));
  auto codec = randomk_codec(0.25);
  std::vector<double> sum(n, 0.0);
  std::vector<std::byte> payload(codec->max_encoded_bytes(n, {}));
  std::vector<float> out(n);
  for (int t = 0; t < trials; ++t) {
    codec->encode(x, {}, {.seed = static_cast<std::uint64_t>(t) * 7919 + 13}, payload);
    codec->decode(payload, out);
    for (std::size_t i = 0; i < n; ++i) sum[i] += out[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    double sd = std::fabs(x[i]) * std::sqrt(0.75 / (0.25 * trials));
    EXPECT_NEAR(sum[i] / trials, x[i], 5 * sd) << "element " << i;
  }
}

TEST(RandomKCodecTest, SizesDecodedOutputAndAccumulate) {
  for (std::size_t n : {0u, 1u, 9u, 4096u, 100003u}) {
    auto x = random_values(n, n + 1);
    auto codec = randomk_codec(0.1);
    std::vector<float> decoded(n, 3.0f);
    std::vector<std::byte> payload(codec->max_encoded_bytes(static_cast<std::int64_t>(n), {}));
    EXPECT_EQ(codec->encode(x, {}, {.seed = n}, payload, decoded), payload.size());
    EXPECT_TRUE(same_bits(decoded, decode(*codec, payload, n)));
    std::vector<float> out(n, 0.25f);
    codec->decode(payload, out, DecodeMode::kAccumulate);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], 0.25f + decoded[i]);
  }
}

TEST(RandomKCodecTest, NonFiniteValuesStayNonFinite) {
  std::vector<float> x = {kNaN, -kInf, kInf, 1.0f};
  auto codec = randomk_codec(1.0);
  auto out = decode(*codec, encode(*codec, x), x.size());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], -kInf);
  EXPECT_EQ(out[2], kInf);
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_THROW(encode(*codec, x, {.non_finite = NonFinitePolicy::kRaise}), InvalidArgument);
}

TEST(RandomKCodecTest, TamperedPayloadsAreCorrupt) {
  auto x = random_values(500, 9);
  auto codec = randomk_codec(0.02);  // k = 10
  const auto good = encode(*codec, x, {.seed = 3});
  std::vector<float> out(x.size());
  auto bad = good;
  set_k(bad, 11);
  EXPECT_THROW(codec->decode(bad, out), Corrupt) << "k larger than the body";
  bad = good;
  set_k(bad, 501);
  set_body_bytes(bad, 501 * 4);
  EXPECT_THROW(codec->decode(bad, out), Corrupt) << "k above the count";
  bad = good;
  bad.pop_back();
  EXPECT_THROW(codec->decode(bad, out), Corrupt) << "truncated";
  bad = good;
  poke<std::uint32_t>(bad, kBlockOffset, 2);
  EXPECT_THROW(codec->decode(bad, out), Corrupt) << "block field set";
  EXPECT_THROW(codec->decode(encode(*topk_codec(0.02), x), out), Corrupt) << "a topk payload";
  std::vector<float> wrong(x.size() - 1);
  EXPECT_THROW(codec->decode(good, wrong), InvalidArgument);
  auto scratch = good;
  EXPECT_THROW(codec->encode(x, {}, {.seed = 3}, scratch, wrong), InvalidArgument) << "short decoded output";

  // The seed is not redundant (a changed seed decodes to other coordinates): the checksum is
  // what catches it.
  auto checked = encode(*codec, x, {.seed = 3, .checksum = true});
  checked[kSeedOffset] ^= std::byte{1};
  EXPECT_THROW(codec->decode(checked, out), Corrupt);
  checked = encode(*codec, x, {.seed = 3, .checksum = true});
  checked.back() ^= std::byte{0x80};
  EXPECT_THROW(codec->decode(checked, out), Corrupt);
}

}  // namespace
}  // namespace braid::compress
