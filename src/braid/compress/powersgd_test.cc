// PowerSGD: the linear algebra of powersgd_math.h against double-precision references, and
// the powersgd codec against codec.h's contract (exact on rank-r matrices, 1-D fallback).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/compress/codec.h"
#include "braid/compress/codec_test_util.h"
#include "braid/compress/payload_header.h"
#include "braid/compress/powersgd_math.h"

namespace braid::compress {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // fp32: |fl(x) - x| <= u |x|
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> normal(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  fill_standard_normal(seed, v);
  return v;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

// a (n x r) b^T (r x m) in double, with the sum of |terms| for error bounds.
struct Reference {
  std::vector<double> value;
  std::vector<double> magnitude;
};

Reference reference_product(const std::vector<float>& a, const std::vector<float>& b, std::int64_t n, std::int64_t m,
                            std::int64_t inner, bool a_transposed) {
  // c(i, j) = sum_t a'(i, t) b(t, j), where a' is a (n x inner) or a^T (a stored inner x n).
  Reference ref{std::vector<double>(static_cast<std::size_t>(n * m)), std::vector<double>(static_cast<std::size_t>(n * m))};
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      double sum = 0.0;
      double magnitude = 0.0;
      for (std::int64_t t = 0; t < inner; ++t) {
        double term = static_cast<double>(a_transposed ? a[t * n + i] : a[i * inner + t]) * b[t * m + j];
        sum += term;
        magnitude += std::fabs(term);
      }
      ref.value[i * m + j] = sum;
      ref.magnitude[i * m + j] = magnitude;
    }
  }
  return ref;
}

// fp32 sums of `inner` products: |computed - exact| <= inner * u * sum |terms| (Higham's
// gamma_n bound, with margin for the final lane combination).
void expect_within_gamma(const std::vector<float>& computed, const Reference& ref, std::int64_t inner) {
  double gamma = static_cast<double>(inner + 8) * kUnitRoundoff;
  for (std::size_t i = 0; i < computed.size(); ++i) {
    ASSERT_NEAR(computed[i], ref.value[i], gamma * ref.magnitude[i] + 1e-30) << "element " << i;
  }
}

std::vector<float> transpose(const std::vector<float>& a, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(a.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  }
  return t;
}

// --- math ------------------------------------------------------------------------------------

TEST(PowerSgdMathTest, ProductsMatchADoubleReference) {
  // cols = 5003 spans two column chunks and leaves a lane tail.
  for (auto [rows, cols, r] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{37, 53, 3}, {3, 5003, 2}, {1, 1, 1}}) {
    auto m = normal(static_cast<std::size_t>(rows * cols), 1);
    auto q = normal(static_cast<std::size_t>(cols * r), 2);
    std::vector<float> p(static_cast<std::size_t>(rows * r));
    multiply({m.data(), rows, cols}, {q.data(), cols, r}, {p.data(), rows, r});
    auto q_as_rows = q;  // reference_product wants b as (inner x m): q is (cols x r) already
    expect_within_gamma(p, reference_product(m, q_as_rows, rows, r, cols, false), cols);

    std::vector<float> qt(static_cast<std::size_t>(cols * r));
    multiply_transposed({m.data(), rows, cols}, {p.data(), rows, r}, {qt.data(), cols, r});
    expect_within_gamma(qt, reference_product(m, p, cols, r, rows, true), rows);

    std::vector<float> approx(static_cast<std::size_t>(rows * cols));
    apply_low_rank({p.data(), rows, r}, {q.data(), cols, r}, {approx.data(), rows, cols}, Combine::kOverwrite);
    expect_within_gamma(approx, reference_product(p, transpose(q, cols, r), rows, cols, r, false), r);
  }
}

TEST(PowerSgdMathTest, AddAndSubtractApplyTheSameProduct) {
  const std::int64_t rows = 9, cols = 4100, r = 3;
  auto p = normal(rows * r, 3);
  auto q = normal(cols * r, 4);
  auto base = normal(rows * cols, 5);
  std::vector<float> product(base.size());
  apply_low_rank({p.data(), rows, r}, {q.data(), cols, r}, {product.data(), rows, cols}, Combine::kOverwrite);
  auto added = base;
  auto subtracted = base;
  apply_low_rank({p.data(), rows, r}, {q.data(), cols, r}, {added.data(), rows, cols}, Combine::kAdd);
  apply_low_rank({p.data(), rows, r}, {q.data(), cols, r}, {subtracted.data(), rows, cols}, Combine::kSubtract);
  for (std::size_t i = 0; i < base.size(); ++i) {
    ASSERT_EQ(added[i], base[i] + product[i]);
    ASSERT_EQ(subtracted[i], base[i] - product[i]);
  }
}

// multiply and apply_low_rank give the bits of the order their header documents, whatever the
// rank (1 to 4 take unrolled kernels, larger ranks the generic loops): a scalar reference
// written from that documentation alone.
TEST(PowerSgdMathTest, ProductsFollowTheDocumentedOrderBitForBit) {
  const std::int64_t rows = 5, cols = 4107;  // two column chunks and a tail of 3 lanes
  for (std::int64_t r = 1; r <= 6; ++r) {
    SCOPED_TRACE(::testing::Message() << "rank " << r);
    const auto m = normal(rows * cols, 21);
    const auto q = normal(cols * r, 22);
    std::vector<float> p(rows * r);
    multiply({m.data(), rows, cols}, {q.data(), cols, r}, {p.data(), rows, r});
    std::vector<float> approx(rows * cols);
    apply_low_rank({p.data(), rows, r}, {q.data(), cols, r}, {approx.data(), rows, cols}, Combine::kOverwrite);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < r; ++j) {
        float l[8] = {};
        for (std::int64_t c = 0; c < cols; ++c) l[c % 8] += m[i * cols + c] * q[c * r + j];
        const float expected = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
        ASSERT_EQ(std::bit_cast<std::uint32_t>(p[i * r + j]), std::bit_cast<std::uint32_t>(expected)) << i << "," << j;
      }
      for (std::int64_t c = 0; c < cols; ++c) {
        float sum = p[i * r] * q[c * r];
        for (std::int64_t j = 1; j < r; ++j) sum += p[i * r + j] * q[c * r + j];
        ASSERT_EQ(std::bit_cast<std::uint32_t>(approx[i * cols + c]), std::bit_cast<std::uint32_t>(sum)) << i << "," << c;
      }
    }
  }
}

// The fused passes of error feedback give the bits of the separate ones, for shapes whose rows
// are not a whole number of the fused functions' row blocks and whose columns span two chunks.
TEST(PowerSgdMathTest, FusedPassesGiveTheBitsOfTheSeparateOnes) {
  for (auto [rows, cols, r] : {std::array<std::int64_t, 3>{1, 7, 1}, {70, 37, 4}, {33, 4100, 2}, {40, 19, 6}}) {
    SCOPED_TRACE(::testing::Message() << rows << "x" << cols << " rank " << r);
    const auto grad = normal(rows * cols, 11);
    const auto residual = normal(rows * cols, 12);
    const auto q = normal(cols * r, 13);

    auto m_separate = residual;
    for (std::size_t i = 0; i < m_separate.size(); ++i) m_separate[i] += grad[i];
    std::vector<float> p_separate(rows * r);
    multiply({m_separate.data(), rows, cols}, {q.data(), cols, r}, {p_separate.data(), rows, r});
    auto m_fused = residual;
    std::vector<float> p_fused(rows * r);
    add_and_multiply({m_fused.data(), rows, cols}, grad.data(), {q.data(), cols, r}, {p_fused.data(), rows, r});
    ASSERT_TRUE(same_bits(m_fused, m_separate));
    ASSERT_TRUE(same_bits(p_fused, p_separate));

    std::vector<float> out_separate(rows * cols);
    apply_low_rank({p_separate.data(), rows, r}, {q.data(), cols, r}, {out_separate.data(), rows, cols},
                   Combine::kOverwrite);
    for (std::size_t i = 0; i < m_separate.size(); ++i) m_separate[i] -= out_separate[i];
    std::vector<float> out_fused(rows * cols);
    apply_low_rank_and_subtract({p_fused.data(), rows, r}, {q.data(), cols, r}, {out_fused.data(), rows, cols},
                                {m_fused.data(), rows, cols});
    EXPECT_TRUE(same_bits(out_fused, out_separate));
    EXPECT_TRUE(same_bits(m_fused, m_separate));
  }
}

// max |P^T P - I| over the r x r Gram matrix, in double.
double orthonormality_error(const std::vector<float>& p, std::int64_t rows, std::int64_t r) {
  double worst = 0.0;
  for (std::int64_t a = 0; a < r; ++a) {
    for (std::int64_t b = 0; b < r; ++b) {
      double dot = 0.0;
      for (std::int64_t i = 0; i < rows; ++i) dot += static_cast<double>(p[i * r + a]) * p[i * r + b];
      worst = std::max(worst, std::fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  }
  return worst;
}

TEST(PowerSgdMathTest, OrthonormalizeGivesOrthonormalColumnsSpanningTheSameSpace) {
  const std::int64_t rows = 200, r = 5;
  auto p = normal(rows * r, 6);
  auto original = p;
  orthonormalize_columns({p.data(), rows, r});
  // Entries are rounded once to fp32 after double arithmetic, so each column is a unit vector
  // to within ~sqrt(rows) u; 1e-5 leaves a wide margin while a skipped step fails by O(0.1).
  EXPECT_LT(orthonormality_error(p, rows, r), 1e-5);
  // Gram-Schmidt keeps the first column's direction: it is the original first column, scaled.
  double norm = 0.0;
  for (std::int64_t i = 0; i < rows; ++i) norm += static_cast<double>(original[i * r]) * original[i * r];
  for (std::int64_t i = 0; i < rows; ++i) EXPECT_NEAR(p[i * r], original[i * r] / std::sqrt(norm), 1e-6);
}

TEST(PowerSgdMathTest, ZeroAndDependentColumnsBecomeZeroNotNaN) {
  const std::int64_t rows = 50, r = 4;
  auto p = normal(rows * r, 7);
  for (std::int64_t i = 0; i < rows; ++i) {
    p[i * r + 1] = 0.0f;                // a zero column
    p[i * r + 2] = 3.0f * p[i * r + 0];  // a multiple of column 0
  }
  orthonormalize_columns({p.data(), rows, r});
  for (std::int64_t i = 0; i < rows; ++i) {
    EXPECT_EQ(p[i * r + 1], 0.0f);
    EXPECT_EQ(p[i * r + 2], 0.0f);
  }
  // Columns 0 and 3 are still orthonormal.
  double dot03 = 0.0, norm3 = 0.0;
  for (std::int64_t i = 0; i < rows; ++i) {
    dot03 += static_cast<double>(p[i * r]) * p[i * r + 3];
    norm3 += static_cast<double>(p[i * r + 3]) * p[i * r + 3];
  }
  EXPECT_NEAR(dot03, 0.0, 1e-6);
  EXPECT_NEAR(norm3, 1.0, 1e-6);
}

TEST(PowerSgdMathTest, NaNPropagatesThroughOrthonormalization) {
  const std::int64_t rows = 20, r = 2;
  auto p = normal(rows * r, 8);
  p[7 * r] = kNaN;
  orthonormalize_columns({p.data(), rows, r});
  EXPECT_TRUE(std::all_of(p.begin(), p.end(), [](float v) { return std::isnan(v); }));
}

TEST(PowerSgdMathTest, StandardNormalIsDeterministicWithTheRightMoments) {
  // N = 2^20 draws: the mean has sd 1/sqrt(N) = 0.001, the variance sd sqrt(2/N) = 0.0014 and
  // the two-sided 5% tail fraction sd sqrt(0.05 * 0.95 / N) = 0.00021; each bound is 5 sd.
  const std::size_t n = 1u << 20;
  auto z = normal(n, 42);
  EXPECT_TRUE(same_bits(z, normal(n, 42)));
  EXPECT_FALSE(same_bits(z, normal(n, 43)));
  double sum = 0.0, squares = 0.0;
  std::size_t tail = 0;
  for (float v : z) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    squares += static_cast<double>(v) * v;
    tail += std::fabs(v) > 1.959964f;
  }
  double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(squares / n - mean * mean, 1.0, 0.007);
  EXPECT_NEAR(static_cast<double>(tail) / n, 0.05, 0.00105);
  // An odd count uses half of the last pair, and a prefix of a longer draw is the shorter draw.
  auto three = normal(3, 42);
  EXPECT_TRUE(same_bits(three, std::span<const float>(z).first(3)));
}

TEST(PowerSgdMathTest, StandardNormalDrawsArePinned) {
  // Every rank draws PowerSGD's Q0 from the seed, so the values must not drift between builds:
  // braid's own log series and Marsaglia's polar method, not libm or std::normal_distribution.
  std::vector<float> z(4);
  fill_standard_normal(1, z);
  const std::uint32_t expected[] = {0x3edbe129u, 0x3fcafa98u, 0x3ee9b47fu, 0xbd5cdd92u};
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_EQ(std::bit_cast<std::uint32_t>(z[i]), expected[i]) << i;
}

// --- codec -----------------------------------------------------------------------------------

std::unique_ptr<Codec> powersgd(std::uint32_t rank) { return make_codec({.id = CodecId::kPowerSgd, .rank = rank}); }

std::vector<std::byte> encode(const Codec& codec, std::span<const float> x, Shape shape, EncodeOptions options = {}) {
  return test_util::encode_exact(codec, x, shape, options);
}

using test_util::decode;

// M = A B^T with A (rows x r), B (cols x r) standard normal: rank r.
std::vector<float> rank_r_matrix(std::int64_t rows, std::int64_t cols, std::int64_t r, std::uint64_t seed) {
  auto a = normal(rows * r, seed);
  auto b = normal(cols * r, seed + 1000);
  auto m = reference_product(a, transpose(b, cols, r), rows, cols, r, false).value;
  return std::vector<float>(m.begin(), m.end());
}

TEST(PowerSgdCodecTest, ExactOnRankRMatrices) {
  // Error bound. Each of M Q0, M^T P and P Q^T is a sum of at most rows + cols terms, so
  // rounding contributes about u (rows + cols) max|M| (Higham's gamma_n); orthonormalising
  // M Q0 = U S (V^T Q0) amplifies it by the condition number of the random r x r mixing
  // V^T Q0 and of S. The bound allows a factor 64 for that; over these shapes and seeds the
  // measured errors stay below 2.2 u (rows + cols) max|M|, while an approximation that missed
  // a direction of M errs by O(max|M|).
  for (auto [rows, cols, r] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{64, 48, 3}, {10, 200, 1},
                               {33, 33, 4}, {128, 16, 8}, {7, 5000, 2}}) {
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      auto m = rank_r_matrix(rows, cols, r, seed * 10 + 1);
      auto codec = powersgd(static_cast<std::uint32_t>(r));
      auto out = decode(*codec, encode(*codec, m, {rows, cols}, {.seed = seed}), m.size());
      float max_m = 0.0f;
      for (float v : m) max_m = std::max(max_m, std::fabs(v));
      double tolerance = 64.0 * kUnitRoundoff * static_cast<double>(rows + cols) * max_m;
      for (std::size_t i = 0; i < m.size(); ++i) {
        ASSERT_NEAR(out[i], m[i], tolerance) << rows << "x" << cols << " r" << r << " seed " << seed << " at " << i;
      }
    }
  }
}

TEST(PowerSgdCodecTest, FullRankIsExactForAnyMatrixAndLowerRankIsNot) {
  const std::int64_t rows = 20, cols = 7;
  auto m = normal(rows * cols, 9);
  auto full = decode(*powersgd(7), encode(*powersgd(7), m, {rows, cols}), m.size());
  for (std::size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(full[i], m[i], 1e-4);
  auto partial = decode(*powersgd(2), encode(*powersgd(2), m, {rows, cols}), m.size());
  double error = 0.0;
  for (std::size_t i = 0; i < m.size(); ++i) error = std::max(error, static_cast<double>(std::fabs(partial[i] - m[i])));
  EXPECT_GT(error, 0.1);  // a random 20x7 matrix is far from rank 2
}

TEST(PowerSgdCodecTest, PayloadHoldsOrthonormalPAndTheHeaderFields) {
  const std::int64_t rows = 40, cols = 30, r = 3;
  auto m = normal(rows * cols, 10);
  auto payload = encode(*powersgd(3), m, {rows, cols}, {.seed = 99});
  PayloadHeader header = read_payload_header(payload);
  EXPECT_EQ(header.codec, CodecId::kPowerSgd);
  EXPECT_EQ(header.block, 3u);
  EXPECT_EQ(header.aux, 40u);
  EXPECT_EQ(header.seed, 99u);
  EXPECT_EQ(payload.size(), kPayloadHeaderBytes + static_cast<std::size_t>(r * (rows + cols)) * sizeof(float));
  std::vector<float> p(static_cast<std::size_t>(rows * r));
  std::memcpy(p.data(), payload.data() + kPayloadHeaderBytes, p.size() * sizeof(float));
  EXPECT_LT(orthonormality_error(p, rows, r), 1e-5);
  EXPECT_EQ(encode(*powersgd(3), m, {rows, cols}, {.seed = 99}), payload);  // deterministic
  EXPECT_NE(encode(*powersgd(3), m, {rows, cols}, {.seed = 98}), payload);  // Q0 follows the seed
}

TEST(PowerSgdCodecTest, DecodedOutputDecodePayloadAndAccumulateAgree) {
  const std::int64_t rows = 16, cols = 4500;
  auto m = normal(rows * cols, 11);
  auto codec = powersgd(2);
  std::vector<std::byte> payload(codec->max_encoded_bytes(rows * cols, {rows, cols}));
  std::vector<float> decoded(m.size());
  codec->encode(m, {rows, cols}, {.seed = 1}, payload, decoded);
  auto out = decode(*codec, payload, m.size());
  EXPECT_TRUE(same_bits(decoded, out));
  std::vector<float> via_header(m.size());
  decode_payload(payload, via_header);
  EXPECT_TRUE(same_bits(via_header, out));
  std::vector<float> accumulated(m.size(), 0.5f);
  codec->decode(payload, accumulated, DecodeMode::kAccumulate);
  for (std::size_t i = 0; i < m.size(); ++i) ASSERT_EQ(accumulated[i], 0.5f + out[i]);
}

TEST(PowerSgdCodecTest, OneDimensionalTensorsFallBackToNone) {
  auto x = normal(77, 12);
  auto codec = powersgd(4);
  EXPECT_EQ(codec->max_encoded_bytes(77, {}), kPayloadHeaderBytes + 77 * sizeof(float));
  std::vector<float> decoded(x.size());
  std::vector<std::byte> payload(codec->max_encoded_bytes(77, {}));
  EXPECT_EQ(codec->encode(x, {}, {}, payload, decoded), payload.size());
  EXPECT_EQ(read_payload_header(payload).codec, CodecId::kNone);
  EXPECT_TRUE(same_bits(decoded, x));
  EXPECT_TRUE(same_bits(decode(*codec, payload, x.size()), x));
  std::vector<float> via_header(x.size());
  decode_payload(payload, via_header);
  EXPECT_TRUE(same_bits(via_header, x));
  EXPECT_TRUE(decode(*codec, encode(*codec, std::vector<float>{}, {}), 0).empty());
}

TEST(PowerSgdCodecTest, RankLargerThanTheMatrixIsInvalid) {
  std::vector<float> m(12, 1.0f);
  EXPECT_THROW(powersgd(4)->max_encoded_bytes(12, {4, 3}), InvalidArgument);
  std::vector<std::byte> out(1024);
  EXPECT_THROW(powersgd(4)->encode(m, {4, 3}, {}, out), InvalidArgument);
  EXPECT_THROW(powersgd(2)->encode(m, {1, 12}, {}, out), InvalidArgument);
  EXPECT_THROW(powersgd(1)->encode(m, {5, 3}, {}, out), InvalidArgument);  // shape does not hold 12
  EXPECT_NO_THROW(powersgd(3)->encode(m, {4, 3}, {}, out));
}

TEST(PowerSgdCodecTest, NonFiniteInputMakesEveryElementNaNOrRaises) {
  const std::int64_t rows = 12, cols = 10;
  for (float bad : {kNaN, std::numeric_limits<float>::infinity()}) {
    for (std::uint32_t r : {1u, 3u}) {
      auto m = normal(rows * cols, 13);
      m[37] = bad;
      auto out = decode(*powersgd(r), encode(*powersgd(r), m, {rows, cols}), m.size());
      EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); })) << bad << " r" << r;
      std::vector<std::byte> payload(powersgd(r)->max_encoded_bytes(rows * cols, {rows, cols}));
      EXPECT_THROW(powersgd(r)->encode(m, {rows, cols}, {.non_finite = NonFinitePolicy::kRaise}, payload),
                   InvalidArgument);
    }
  }
  // A zero matrix is finite and decodes to exact zeros (no 0/0).
  std::vector<float> zero(rows * cols, 0.0f);
  auto out = decode(*powersgd(2), encode(*powersgd(2), zero, {rows, cols}), zero.size());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 0.0f; }));
}

TEST(PowerSgdCodecTest, TamperedPayloadsAreCorrupt) {
  const std::int64_t rows = 6, cols = 8;
  auto m = normal(rows * cols, 14);
  auto codec = powersgd(2);
  const auto good = encode(*codec, m, {rows, cols});
  std::vector<float> out(m.size());
  auto with = [&](std::size_t offset, auto value) {
    auto bad = good;
    std::memcpy(bad.data() + offset, &value, sizeof(value));
    return bad;
  };
  EXPECT_THROW(codec->decode(with(24, std::uint64_t{5}), out), Corrupt) << "rows do not divide the count";
  EXPECT_THROW(codec->decode(with(24, std::uint64_t{0}), out), Corrupt) << "zero rows";
  EXPECT_THROW(codec->decode(with(24, std::uint64_t{96}), out), Corrupt) << "rows above the count";
  EXPECT_THROW(codec->decode(with(20, std::uint32_t{0}), out), Corrupt) << "rank 0";
  EXPECT_THROW(codec->decode(with(20, std::uint32_t{7}), out), Corrupt) << "rank above min(rows, cols)";
  EXPECT_THROW(codec->decode(with(20, std::uint32_t{3}), out), Corrupt) << "rank that does not match the body";
  auto truncated = good;
  truncated.pop_back();
  EXPECT_THROW(codec->decode(truncated, out), Corrupt);
  std::vector<float> wrong(m.size() + 1);
  EXPECT_THROW(codec->decode(good, wrong), InvalidArgument);
  auto scratch = good;
  EXPECT_THROW(codec->encode(m, {rows, cols}, {}, scratch, wrong), InvalidArgument) << "long decoded output";
  auto topk = make_codec({.id = CodecId::kTopK, .ratio = 0.5});
  EXPECT_THROW(codec->decode(encode(*topk, m, {}), out), Corrupt) << "a topk payload";

  auto checked = encode(*codec, m, {rows, cols}, {.checksum = true});
  checked[kPayloadHeaderBytes + 5] ^= std::byte{0x04};
  EXPECT_THROW(codec->decode(checked, out), Corrupt);
}

}  // namespace
}  // namespace braid::compress
