// The quantising codecs (fp16, bf16, int8, sign): every clause of codec.h's contract, each
// codec's error bound and format rules, and Note [quantize identity]: every kernel table this
// CPU can run gives the scalar table's bytes, kernel by kernel and payload by payload.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "braid/compress/codec_test_util.h"

#include "braid/base/error.h"
#include "braid/base/half.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/quantize_kernels.h"

namespace braid::compress {
namespace {

using Bytes = std::vector<std::byte>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }

// Gradient-like values: normal-ish, magnitudes spread over eight decades.
std::vector<float> gradient(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> decade(-6.0f, 2.0f);
  std::vector<float> x(count);
  for (float& v : x) v = normal(rng) * std::pow(10.0f, decade(rng));
  return x;
}

// Values at every boundary the formats have: zeros, subnormals, fp16's range ends, ties,
// infinities and NaNs with payloads and signs.
std::vector<float> edge_values() {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1p-24f, 0x1p-25f,
                          0x1.8p-24f, 0x1p-14f, 65504.0f, 65519.0f, 65520.0f, -65520.0f, 1.0f + 0x1p-11f,
                          1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 2.5f, -2.5f, 3.5f, 0.5f, 127.0f,
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1e30f, kInf,
                          -kInf, kNaN, -kNaN};
  for (std::uint32_t bits : {0x7f800001u, 0xff800001u, 0x7fa00000u, 0x7fbfffffu, 0x7f802000u, 0x3f808000u,
                             0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x477fefffu, 0x477ff000u, 0x33000001u}) {
    x.push_back(std::bit_cast<float>(bits));
  }
  return x;
}

Bytes encode(const Codec& codec, std::span<const float> x, EncodeOptions options = {},
             std::span<float> decoded = {}) {
  return test_util::encode_exact(codec, x, {}, options, decoded);
}

using test_util::decode;

void expect_same_bits(std::span<const float> a, std::span<const float> b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(bits_of(a[i]), bits_of(b[i])) << what << ": element " << i << " (" << a[i] << " vs " << b[i] << ")";
  }
}

// Rewrites the header of `payload` (no checksum) through `change`.
template <typename Change>
Bytes with_header(Bytes payload, Change change) {
  PayloadHeader header = read_payload_header(payload);
  change(header);
  write_payload_header(header, payload);
  return payload;
}

float scale_at(const Bytes& payload, std::size_t block) {
  float scale;
  std::memcpy(&scale, payload.data() + kPayloadHeaderBytes + block * 4, 4);
  return scale;
}

// ---- the contract of codec.h, for every quantising codec and a few block sizes --------------

class QuantCodecContract : public testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<Codec> codec_ = make_codec(parse_codec_spec(GetParam()));
  CodecId id() const { return codec_->spec().id; }
};

INSTANTIATE_TEST_SUITE_P(Specs, QuantCodecContract,
                         testing::Values("fp16", "bf16", "int8", "int8:7", "int8:64", "sign", "sign:13", "sign:64"),
                         [](const testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) c = c == ':' ? '_' : c;
                           return name;
                         });

TEST_P(QuantCodecContract, MaxEncodedBytesIsTheExactSizeForEveryCount) {
  for (std::size_t count : {0, 1, 5, 7, 8, 9, 63, 64, 65, 1000, 1024, 1025, 3000}) {
    std::vector<float> x = gradient(count, count);
    Bytes payload = encode(*codec_, x);
    EXPECT_EQ(payload.size(), codec_->max_encoded_bytes(static_cast<std::int64_t>(count), {})) << count;
    EXPECT_EQ(read_payload_header(payload).count, count);
  }
  EXPECT_THROW(codec_->max_encoded_bytes(-1, {}), InvalidArgument);
  EXPECT_THROW(codec_->max_encoded_bytes(6, {.rows = 2, .cols = 2}), InvalidArgument);
}

TEST_P(QuantCodecContract, EmptyInputGivesAnEmptyBodyAndDecodes) {
  Bytes payload = encode(*codec_, {});
  EXPECT_EQ(payload.size(), kPayloadHeaderBytes);
  std::vector<float> out;
  EXPECT_NO_THROW(codec_->decode(payload, out));
  EXPECT_NO_THROW(decode_payload(payload, out, DecodeMode::kAccumulate));
}

TEST_P(QuantCodecContract, DecodedOutputOfEncodeIsExactlyWhatDecodeGives) {
  std::vector<float> x = gradient(2500, 7);
  x[3] = kNaN;  // a NaN block or element too
  x[1500] = -0.0f;
  std::vector<float> decoded(x.size(), -7.0f);
  Bytes payload = encode(*codec_, x, {}, decoded);
  expect_same_bits(decoded, decode(*codec_, payload, x.size()), "decoded vs decode()");
  expect_same_bits(decoded, [&] {
    std::vector<float> out(x.size());
    decode_payload(payload, out);
    return out;
  }(), "decoded vs decode_payload()");
  EXPECT_EQ(payload, encode(*codec_, x)) << "the decoded output does not change the payload";
}

TEST_P(QuantCodecContract, AccumulateAddsTheDecodedValues) {
  std::vector<float> x = gradient(1100, 11);
  Bytes payload = encode(*codec_, x);
  std::vector<float> decoded = decode(*codec_, payload, x.size());
  std::vector<float> out = gradient(x.size(), 12);
  std::vector<float> expected = out;
  for (std::size_t i = 0; i < out.size(); ++i) expected[i] += decoded[i];
  codec_->decode(payload, out, DecodeMode::kAccumulate);
  expect_same_bits(out, expected, "accumulate");
}

TEST_P(QuantCodecContract, NonFiniteInputRaisesUnderKRaiseAndIsNeverFiniteOtherwise) {
  for (float bad : {kNaN, kInf, -kInf}) {
    std::vector<float> x = gradient(300, 3);
    x[77] = bad;
    try {
      encode(*codec_, x, {.non_finite = NonFinitePolicy::kRaise});
      ADD_FAILURE() << "kRaise accepted " << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("element 77"), std::string::npos) << e.what();
    }
    std::vector<float> out = decode(*codec_, encode(*codec_, x), x.size());
    EXPECT_FALSE(std::isfinite(out[77])) << "non-finite input decoded to " << out[77];
  }
  std::vector<float> finite = gradient(300, 4);
  EXPECT_NO_THROW(encode(*codec_, finite, {.non_finite = NonFinitePolicy::kRaise}));
}

TEST_P(QuantCodecContract, ChecksumCatchesAFlippedBodyByte) {
  std::vector<float> x = gradient(500, 5);
  Bytes payload = encode(*codec_, x, {.checksum = true});
  expect_same_bits(decode(*codec_, payload, x.size()), decode(*codec_, encode(*codec_, x), x.size()), "checksummed");
  for (std::size_t at : {kPayloadHeaderBytes, payload.size() / 2, payload.size() - 1}) {
    Bytes tampered = payload;
    tampered[at] ^= std::byte{0x10};
    EXPECT_THROW(decode(*codec_, tampered, x.size()), Corrupt) << "flipped byte " << at;
  }
}

TEST_P(QuantCodecContract, TruncatedForeignOrInconsistentPayloadsAreCorrupt) {
  std::vector<float> x = gradient(200, 6);
  Bytes payload = encode(*codec_, x);
  for (std::size_t keep : {std::size_t{0}, kPayloadHeaderBytes - 1, kPayloadHeaderBytes, payload.size() - 1}) {
    Bytes truncated(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(keep));
    EXPECT_THROW(decode(*codec_, truncated, x.size()), Corrupt) << keep << " bytes";
  }
  // A header that agrees with its own length but not with the codec's body layout.
  Bytes longer = with_header(payload, [](PayloadHeader& h) { h.payload_bytes += 1; });
  longer.push_back(std::byte{0});
  EXPECT_THROW(decode(*codec_, longer, x.size()), Corrupt);
  Bytes more = with_header(payload, [](PayloadHeader& h) { h.count += 1; });
  EXPECT_THROW(decode(*codec_, more, x.size() + 1), Corrupt);
  EXPECT_THROW(decode(*codec_, with_header(payload, [](PayloadHeader& h) { h.aux = 1; }), x.size()), Corrupt);
  EXPECT_THROW(decode(*codec_, with_header(payload, [](PayloadHeader& h) { h.seed = 9; }), x.size()), Corrupt);
  CodecId other = id() == CodecId::kFp16 ? CodecId::kBf16 : CodecId::kFp16;
  EXPECT_THROW(decode(*codec_, with_header(payload, [&](PayloadHeader& h) { h.codec = other; }), x.size()), Corrupt);
}

TEST_P(QuantCodecContract, WrongBufferSizesAreInvalidArguments) {
  std::vector<float> x = gradient(100, 8);
  Bytes payload = encode(*codec_, x);
  std::vector<float> shorter(x.size() - 1), longer(x.size() + 1);
  EXPECT_THROW(codec_->decode(payload, shorter), InvalidArgument);
  EXPECT_THROW(codec_->decode(payload, longer), InvalidArgument);
  Bytes small(payload.size() - 1);
  EXPECT_THROW(codec_->encode(x, {}, {}, small), InvalidArgument);
  std::vector<float> decoded(x.size() - 1);
  EXPECT_THROW(codec_->encode(x, {}, {}, payload, decoded), InvalidArgument);
  EXPECT_THROW(codec_->encode(x, {.rows = 3, .cols = 3}, {}, payload), InvalidArgument);
  EXPECT_NO_THROW(codec_->encode(x, {.rows = 10, .cols = 10}, {}, payload));
}

// ---- fp16 / bf16 --------------------------------------------------------------------------

float reference_half(CodecId id, float v) {
  float r = id == CodecId::kFp16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
  return r != r ? std::bit_cast<float>(bits_of(r) | 0x00400000u) : r;
}

TEST(HalfCodecTest, RelativeErrorIsWithinHalfAnUlpForNormalValues) {
  for (auto [id, bound, lo, hi] : {std::tuple{CodecId::kFp16, 0x1p-11, 0x1p-14, 65504.0},
                                   std::tuple{CodecId::kBf16, 0x1p-8, 0x1p-126, 1e38}}) {
    auto codec = make_codec({.id = id});
    std::vector<float> x = gradient(20000, 21);
    for (float& v : x) {
      v = std::copysign(std::clamp(std::fabs(v) * 1000.0f, static_cast<float>(lo), static_cast<float>(hi)), v);
    }
    std::vector<float> out = decode(*codec, encode(*codec, x), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(static_cast<double>(out[i]) - x[i]), bound * std::fabs(x[i])) << codec_name(id) << x[i];
    }
  }
}

TEST(HalfCodecTest, EveryValueIsTheRoundedSixteenBitFloatNaNAndInfKept) {
  for (CodecId id : {CodecId::kFp16, CodecId::kBf16}) {
    auto codec = make_codec({.id = id});
    std::vector<float> x = edge_values();
    std::vector<float> out = decode(*codec, encode(*codec, x), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(bits_of(out[i]), bits_of(reference_half(id, x[i]))) << codec_name(id) << " " << x[i];
      EXPECT_EQ(std::isnan(out[i]), std::isnan(x[i])) << x[i];
      if (std::isinf(x[i])) {
        EXPECT_EQ(out[i], x[i]);
      }
    }
  }
  auto fp16 = make_codec({.id = CodecId::kFp16});
  std::vector<float> ties = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f};
  std::vector<float> out = decode(*fp16, encode(*fp16, ties), ties.size());
  EXPECT_EQ(out[0], 1.0f);  // ties to even
  EXPECT_EQ(out[1], 1.0f + 0x1p-9f);
  EXPECT_EQ(out[2], kInf);  // fp16 overflow
}

// ---- int8 ---------------------------------------------------------------------------------

TEST(Int8CodecTest, ErrorIsAtMostHalfAScalePerElementInEveryBlock) {
  for (std::uint32_t block : {1u, 7u, 256u, 1024u, 4096u}) {
    auto codec = make_codec({.id = CodecId::kInt8, .block = block});
    for (std::size_t count : {std::size_t{1}, std::size_t{5}, std::size_t{1000}, std::size_t{1024},
                              std::size_t{5000}}) {
      std::vector<float> x = gradient(count, block + count);
      Bytes payload = encode(*codec, x);
      std::vector<float> out = decode(*codec, payload, count);
      for (std::size_t i = 0; i < count; ++i) {
        std::size_t first = i / block * block;
        float max_abs = 0;
        for (std::size_t j = first; j < std::min<std::size_t>(first + block, count); ++j) {
          max_abs = std::max(max_abs, std::fabs(x[j]));
        }
        float scale = scale_at(payload, i / block);
        ASSERT_EQ(scale, max_abs / 127.0f) << "block " << i / block;
        // scale/2, plus the four single roundings of the file comment (slack 2^-21 * max|x|).
        ASSERT_LE(std::fabs(static_cast<double>(out[i]) - x[i]), scale / 2.0 + 0x1p-21 * max_abs)
            << "block " << block << " count " << count << " element " << i;
      }
    }
  }
}

TEST(Int8CodecTest, RoundsToNearestEvenAndKeepsTheMaximumExact) {
  auto codec = make_codec({.id = CodecId::kInt8});
  std::vector<float> x = {127.0f, 2.5f, -2.5f, 3.5f, -127.0f, 0.49f, -0.0f};  // inv = scale = 1
  std::vector<float> out = decode(*codec, encode(*codec, x), x.size());
  EXPECT_EQ(out, (std::vector<float>{127.0f, 2.0f, -2.0f, 4.0f, -127.0f, 0.0f, 0.0f}));
}

TEST(Int8CodecTest, ZeroTinyAndNonFiniteBlocksAreDefined) {
  auto codec = make_codec({.id = CodecId::kInt8, .block = 4});
  std::vector<float> x = {0, -0.0f, 0, 0,                     // all zero: scale 0
                          0x1p-120f, -0x1p-121f, 0, 0x1p-149f, // below 2^-119: flushed to 0
                          0x1p-119f, -0x1p-120f, 0, 0,         // at the threshold: quantised
                          1.0f, kNaN, 2.0f, 3.0f,               // NaN: the whole block is NaN
                          -kInf, 1.0f, 0, 0,                    // Inf too
                          1.0f, -1.0f};                         // short last block, unaffected
  Bytes payload = encode(*codec, x);
  std::vector<float> out = decode(*codec, payload, x.size());
  EXPECT_EQ(scale_at(payload, 0), 0.0f);
  EXPECT_EQ(scale_at(payload, 1), 0.0f);
  EXPECT_EQ(scale_at(payload, 2), 0x1p-119f / 127.0f);
  EXPECT_EQ(bits_of(scale_at(payload, 3)), kNanScaleBits);
  EXPECT_EQ(bits_of(scale_at(payload, 4)), kNanScaleBits);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bits_of(out[i]), 0u) << i;
  float bound = 0x1p-119f / 254.0f + 0x1p-119f * 0x1p-21f;  // scale/2 + the rounding slack
  EXPECT_NEAR(out[8], 0x1p-119f, bound);
  EXPECT_NEAR(out[9], -0x1p-120f, bound);
  for (int i = 12; i < 20; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  EXPECT_EQ(out[20], 1.0f);
  EXPECT_EQ(out[21], -1.0f);
}

TEST(Int8CodecTest, DecodesThePayloadsOwnBlockSizeAndRefusesBadScalesOrBlocks) {
  std::vector<float> x = gradient(1000, 31);
  Bytes payload = encode(*make_codec({.id = CodecId::kInt8, .block = 64}), x);
  auto codec = make_codec({.id = CodecId::kInt8});  // block 1024
  expect_same_bits(decode(*codec, payload, x.size()), decode(*make_codec({.id = CodecId::kInt8, .block = 64}),
                                                             payload, x.size()), "self-describing block");
  EXPECT_THROW(decode(*codec, with_header(payload, [](PayloadHeader& h) { h.block = 0; }), x.size()), Corrupt);
  EXPECT_THROW(decode(*codec, with_header(payload, [](PayloadHeader& h) { h.block = kMaxBlock + 1; }), x.size()),
               Corrupt);
  EXPECT_THROW(decode(*codec, with_header(payload, [](PayloadHeader& h) { h.block = 128; }), x.size()), Corrupt);
  for (float bad : {-1.0f, kInf, -0.0f}) {
    Bytes tampered = payload;
    std::memcpy(tampered.data() + kPayloadHeaderBytes + 4 * 15, &bad, 4);  // the last block's scale
    std::vector<float> out(x.size(), 3.0f);
    EXPECT_THROW(codec->decode(tampered, out), Corrupt) << bad;
    EXPECT_EQ(out, std::vector<float>(x.size(), 3.0f)) << "refused before any output is written";
  }
}

// ---- sign ---------------------------------------------------------------------------------

// The scale's definition, written independently of the kernels (codec_sign.cc).
float reference_mean_abs(std::span<const float> block) {
  double lanes[8] = {};
  for (std::size_t i = 0; i < block.size(); ++i) lanes[i % 8] += std::fabs(static_cast<double>(block[i]));
  double sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  return std::isfinite(sum) ? static_cast<float>(sum / static_cast<double>(block.size())) : kNaN;
}

TEST(SignCodecTest, DecodesToTheSignTimesTheBlocksMeanAbsoluteValue) {
  for (std::uint32_t block : {1u, 5u, 13u, 64u, 1024u}) {
    auto codec = make_codec({.id = CodecId::kSign, .block = block});
    for (std::size_t count : {std::size_t{1}, std::size_t{9}, std::size_t{100}, std::size_t{3001}}) {
      std::vector<float> x = gradient(count, block * 7 + count);
      x[0] = -0.0f;  // negative by its sign bit
      Bytes payload = encode(*codec, x);
      std::vector<float> out = decode(*codec, payload, count);
      for (std::size_t i = 0; i < count; ++i) {
        std::size_t first = i / block * block;
        std::span<const float> blk(x.data() + first, std::min<std::size_t>(block, count - first));
        float scale = reference_mean_abs(blk);
        ASSERT_EQ(bits_of(scale_at(payload, i / block)), bits_of(scale)) << "block " << i / block;
        ASSERT_EQ(bits_of(out[i]), bits_of(std::signbit(x[i]) ? -scale : scale)) << block << " " << count << " " << i;
      }
    }
  }
}

// Random mantissas over 2^-40..2^40: partial sums in double round (a spread past 29 bits of
// exponent), so the definition's order (lanes, then the tree) decides the scale's last bits.
TEST(SignCodecTest, ScaleFollowsTheDefinedSummationOrderBitForBit) {
  auto codec = make_codec({.id = CodecId::kSign, .block = 100});
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::vector<float> x(1000);
  for (float& v : x) v = std::ldexp(mantissa(rng), exponent(rng));
  Bytes payload = encode(*codec, x);
  for (std::size_t k = 0; k < 10; ++k) {
    EXPECT_EQ(bits_of(scale_at(payload, k)), bits_of(reference_mean_abs(std::span(x).subspan(k * 100, 100)))) << k;
  }
  // Built so that the order matters after rounding to fp32: lane 0 holds 1 + 2^-24 (an fp32
  // tie), lanes 4 and 6 hold 2^-53 each. The tree adds each 2^-53 to a larger partial sum
  // (a double tie, rounded away), so the fp32 tie stays and rounds to even: 1/16. Pairing
  // lanes 4 and 6 first would give 2^-52, break the tie and round up.
  std::vector<float> tie(16, 0.0f);
  tie[0] = 1.0f;
  tie[8] = 0x1p-24f;
  tie[4] = tie[6] = 0x1p-53f;
  auto block16 = make_codec({.id = CodecId::kSign, .block = 16});
  EXPECT_EQ(scale_at(encode(*block16, tie), 0), 1.0f / 16);
}

TEST(SignCodecTest, NonFiniteBlocksAreNaNAndHugeFiniteBlocksDoNotOverflow) {
  auto codec = make_codec({.id = CodecId::kSign, .block = 8});
  std::vector<float> x(32, std::numeric_limits<float>::max());
  x[9] = kNaN;
  x[17] = -kInf;
  x[25] = -1.0f;
  std::vector<float> out = decode(*codec, encode(*codec, x), x.size());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], std::numeric_limits<float>::max()) << i;
  for (int i = 8; i < 24; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  EXPECT_TRUE(std::isfinite(out[24]));
  EXPECT_LT(out[25], 0.0f);
}

TEST(SignCodecTest, PaddingBitsAreZeroAndTamperedPaddingOrScalesAreRefused) {
  auto codec = make_codec({.id = CodecId::kSign});
  std::vector<float> x(13, -1.0f);
  Bytes out(codec->max_encoded_bytes(13, {}), std::byte{0xff});  // garbage where the padding goes
  codec->encode(x, {}, {}, out);
  EXPECT_EQ(out.back(), std::byte{0x1f});
  std::vector<float> decoded(13);
  Bytes tampered = out;
  tampered.back() |= std::byte{0x20};
  EXPECT_THROW(codec->decode(tampered, decoded), Corrupt);
  tampered = out;
  float negative = -1.0f;
  std::memcpy(tampered.data() + kPayloadHeaderBytes, &negative, 4);
  EXPECT_THROW(codec->decode(tampered, decoded), Corrupt);
}

// ---- Note [quantize identity]: every table against the scalar one -------------------------

class QuantizeKernelsIdentity : public testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::cpu_supports(kernels::Isa::kAvx2)) GTEST_SKIP() << "this CPU cannot run the avx2 kernels";
    simd_table_ = &quantize_kernels_for(kernels::Isa::kAvx2);
  }
  const QuantizeKernels& scalar_ = kScalarQuantizeKernels;
  const QuantizeKernels* simd_table_ = nullptr;
};

// Random bit patterns (every NaN payload, subnormals, huge values) mixed with gradients and
// the edge values, so every kernel sees every class of input at every position of a vector.
std::vector<float> mixed_input(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> x = gradient(count, seed), edges = edge_values();
  for (float& v : x) {
    std::uint64_t r = rng();
    if (r % 4 == 0) v = std::bit_cast<float>(static_cast<std::uint32_t>(r >> 32));
    if (r % 7 == 0) v = edges[(r >> 8) % edges.size()];
  }
  return x;
}

constexpr Store kStores[] = {Store::kOverwrite, Store::kStream, Store::kAccumulate};

// Float outputs start at offsets 0..7 floats from an aligned buffer, so the streaming path's
// scalar head runs every length.
constexpr std::size_t kOutOffsets[] = {0, 1, 3, 7};

TEST_F(QuantizeKernelsIdentity, HalfConversionsMatchOnEveryBitPattern) {
  std::vector<float> x;
  for (std::uint32_t top = 0; top < 0x10000; ++top) {
    for (std::uint32_t low : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      x.push_back(std::bit_cast<float>(top << 16 | low));
    }
  }
  for (auto narrow : {&QuantizeKernels::to_fp16, &QuantizeKernels::to_bf16}) {
    for (Store store : {Store::kOverwrite, Store::kStream}) {
      for (std::size_t offset : {0, 1, 2, 6}) {  // bytes; an odd address cannot stream
        Bytes a(2 * x.size() + offset), b(a.size());
        (scalar_.*narrow)(x.data(), x.size(), a.data() + offset, store);
        (simd_table_->*narrow)(x.data(), x.size(), b.data() + offset, store);
        simd_table_->stream_fence();
        ASSERT_EQ(a, b) << "offset " << offset;
      }
    }
  }
  std::vector<std::uint16_t> every(0x10000);
  for (std::uint32_t h = 0; h < 0x10000; ++h) every[h] = static_cast<std::uint16_t>(h);
  for (auto widen : {&QuantizeKernels::from_fp16, &QuantizeKernels::from_bf16}) {
    for (Store store : kStores) {
      for (std::size_t offset : kOutOffsets) {
        std::vector<float> fa = mixed_input(every.size() + offset, 5), fb = fa;
        (scalar_.*widen)(every.data(), every.size(), fa.data() + offset, store);
        (simd_table_->*widen)(every.data(), every.size(), fb.data() + offset, store);
        simd_table_->stream_fence();
        expect_same_bits(fa, fb, "widen, store mode " + std::to_string(static_cast<int>(store)));
      }
    }
  }
}

TEST_F(QuantizeKernelsIdentity, Int8AndSignKernelsMatchAtEveryLengthAndOffset) {
  for (std::size_t count = 0; count < 80; ++count) {
    for (std::size_t offset : kOutOffsets) {
      std::vector<float> x = mixed_input(count + offset, count * 8 + offset);
      const float* in = x.data() + offset;
      EXPECT_EQ(scalar_.max_abs_bits(in, count), simd_table_->max_abs_bits(in, count));
      double la[8] = {1, 2, 3, 4, 5, 6, 7, 8}, lb[8] = {1, 2, 3, 4, 5, 6, 7, 8};
      scalar_.sum_abs_lanes(in, count, la);
      simd_table_->sum_abs_lanes(in, count, lb);
      for (int j = 0; j < 8; ++j) {  // a NaN's payload is the one thing left unspecified
        if (std::isnan(la[j]) && std::isnan(lb[j])) continue;
        EXPECT_EQ(std::bit_cast<std::uint64_t>(la[j]), std::bit_cast<std::uint64_t>(lb[j])) << count << " lane " << j;
      }
      std::vector<float> finite = gradient(count + offset, count);
      for (float inv : {1.0f, 127.0f / 3.0f, 1e6f, 0x1p-20f}) {
        std::vector<std::int8_t> qa(count + 1, 5), qb(count + 1, 5);
        float max_abs = 0;
        for (std::size_t i = 0; i < count; ++i) max_abs = std::max(max_abs, std::fabs(finite[offset + i]));
        float used = inv == 1.0f && max_abs > 0 ? 127.0f / max_abs : inv;  // the codec's inv, and wild ones
        scalar_.quantize_int8(finite.data() + offset, count, used, qa.data());
        simd_table_->quantize_int8(finite.data() + offset, count, used, qb.data());
        ASSERT_EQ(qa, qb) << count << " inv " << used;
        for (Store store : kStores) {
          for (float scale : {0.0f, 0.37f, kNaN, std::bit_cast<float>(kNanScaleBits)}) {
            std::vector<float> oa = mixed_input(count + offset, 3), ob = oa;
            scalar_.dequantize_int8(qa.data(), count, scale, oa.data() + offset, store);
            simd_table_->dequantize_int8(qa.data(), count, scale, ob.data() + offset, store);
            simd_table_->stream_fence();
            expect_same_bits(oa, ob, "dequantize");
          }
        }
      }
      for (std::size_t first_bit : {0, 1, 5, 8, 13}) {
        std::vector<std::uint8_t> ba((first_bit + count) / 8 + 2, 0xa5), bb = ba;
        scalar_.pack_signs(in, count, ba.data(), first_bit);
        simd_table_->pack_signs(in, count, bb.data(), first_bit);
        ASSERT_EQ(ba, bb) << count << " from bit " << first_bit;
        // Exactly the bytes the bits occupy, so a read past them is caught by ASan.
        std::vector<std::uint8_t> bits(ba.begin(), ba.begin() + static_cast<std::ptrdiff_t>((first_bit + count + 7) / 8));
        for (Store store : kStores) {
          for (float scale : {0.25f, kNaN}) {
            std::vector<float> oa = mixed_input(count + offset, 4), ob = oa;
            scalar_.unpack_signs(bits.data(), first_bit, count, scale, oa.data() + offset, store);
            simd_table_->unpack_signs(bits.data(), first_bit, count, scale, ob.data() + offset, store);
            simd_table_->stream_fence();
            expect_same_bits(oa, ob, "unpack_signs");
          }
        }
      }
    }
  }
}

// Whole payloads, with the decoded output, and decoding in both modes: the codecs' block and
// bit-offset bookkeeping, and (from 4 MiB of output) their streaming stores.
TEST_F(QuantizeKernelsIdentity, WholePayloadsAreByteIdentical) {
  for (const char* text : {"fp16", "bf16", "int8", "int8:5", "int8:33", "sign", "sign:5", "sign:33"}) {
    CodecSpec spec = parse_codec_spec(text);
    auto make = [&](const QuantizeKernels& k) {
      switch (spec.id) {
        case CodecId::kInt8: return make_int8_codec(spec, k);
        case CodecId::kSign: return make_sign_codec(spec, k);
        default: return make_half_codec(spec, k);
      }
    };
    auto a = make(scalar_), b = make(*simd_table_);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{4099},
                              (kStreamBytes / 4) + 5}) {
      if (count > kStreamBytes / 4 && spec.block != 0) continue;  // the large case once per codec
      for (bool edgy : {false, true}) {
        if (count > kStreamBytes / 4 && !edgy) continue;
        std::vector<float> x = edgy ? mixed_input(count, count + 1) : gradient(count, count + 2);
        std::vector<float> da(count), db(count);
        Bytes pa = encode(*a, x, {}, da), pb = encode(*b, x, {}, db);
        ASSERT_EQ(pa, pb) << text << " " << count;
        ASSERT_EQ(pa, encode(*b, x)) << text << " " << count << " without decoded output";
        expect_same_bits(da, db, "decoded output");
        expect_same_bits(da, decode(*b, pa, count), "decoded output vs decode");
        std::vector<float> oa = mixed_input(count, 9), ob = oa;
        a->decode(pa, oa, DecodeMode::kAccumulate);
        b->decode(pa, ob, DecodeMode::kAccumulate);
        expect_same_bits(oa, ob, std::string(text) + " accumulate");
      }
    }
  }
}

}  // namespace
}  // namespace braid::compress
