// Every SIMD kernel table must give the scalar table's bytes for every input (Note [kernel
// identity] in reduce_kernels.h). Paths this CPU cannot run are skipped, not faked.
#include "braid/base/reduce_kernels.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/base/half.h"

namespace braid::kernels {
namespace {

constexpr DType kDTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd};

using Bytes = std::vector<std::uint8_t>;

void run(Isa isa, DType dtype, ReduceOp op, void* dst, const void* src, std::size_t count) {
  lookup(kernels_for(isa), dtype, op)(dst, src, count);
}

template <typename T>
void put(Bytes& bytes, std::size_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}

// Mostly ordinary values (so sums and products are not all NaN), plus raw bit patterns that
// reach NaN payloads, infinities, subnormals and huge magnitudes.
Bytes random_elements(DType dtype, std::size_t count, std::mt19937_64& rng) {
  Bytes bytes(count * dtype_size(dtype));
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bits = rng();
    bool raw = bits % 5 == 0;
    float v = value(rng);
    switch (dtype) {
      case DType::kF32: put(bytes, i, raw ? std::bit_cast<float>(static_cast<std::uint32_t>(bits >> 8)) : v); break;
      case DType::kF64: put(bytes, i, raw ? std::bit_cast<double>(bits * 0x9e3779b97f4a7c15ull) : double{v} / 3); break;
      case DType::kF16: put(bytes, i, raw ? static_cast<std::uint16_t>(bits >> 8) : float_to_half(v)); break;
      case DType::kBF16: put(bytes, i, raw ? static_cast<std::uint16_t>(bits >> 8) : float_to_bf16(v)); break;
      case DType::kI32: put(bytes, i, static_cast<std::uint32_t>(bits >> 8)); break;
      case DType::kI64: put(bytes, i, bits); break;
      case DType::kU8: put(bytes, i, static_cast<std::uint8_t>(bits >> 8)); break;
    }
  }
  return bytes;
}

// Runs `isa` and the scalar table on copies of (dst, src) and compares the bytes.
void expect_matches_scalar(Isa isa, DType dtype, ReduceOp op, const Bytes& dst, const Bytes& src,
                           std::size_t dst_offset, std::size_t src_offset, std::size_t count) {
  std::size_t size = dtype_size(dtype);
  Bytes expected = dst, actual = dst;
  run(Isa::kScalar, dtype, op, expected.data() + dst_offset * size, src.data() + src_offset * size, count);
  run(isa, dtype, op, actual.data() + dst_offset * size, src.data() + src_offset * size, count);
  if (expected == actual) return;
  for (std::size_t i = 0; i < expected.size(); i += size) {
    if (std::memcmp(&expected[i], &actual[i], size) != 0) {
      ADD_FAILURE() << fmt::format("{} {} {}: count {} offsets {}/{}: element {} differs from scalar", isa_name(isa),
                                   dtype_name(dtype), reduce_op_name(op), count, dst_offset, src_offset, i / size);
      return;
    }
  }
}

class ReduceKernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << "this CPU cannot run the " << isa_name(GetParam()) << " kernels";
  }
};

TEST_P(ReduceKernelsTest, MatchesScalarOnRandomInputs) {
  std::mt19937_64 rng(42);
  const std::size_t counts[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 1000, 4099};
  const std::size_t offsets[][2] = {{0, 0}, {1, 3}, {3, 1}};  // in elements: vectors start unaligned
  for (DType dtype : kDTypes) {
    for (ReduceOp op : kOps) {
      for (std::size_t count : counts) {
        for (const auto& offset : offsets) {
          Bytes dst = random_elements(dtype, count + 4, rng), src = random_elements(dtype, count + 4, rng);
          expect_matches_scalar(GetParam(), dtype, op, dst, src, offset[0], offset[1], count);
        }
      }
    }
  }
}

TEST_P(ReduceKernelsTest, MatchesScalarWhenDstIsSrc) {
  std::mt19937_64 rng(7);
  for (DType dtype : kDTypes) {
    for (ReduceOp op : kOps) {
      Bytes a = random_elements(dtype, 1000, rng), b = a;
      run(Isa::kScalar, dtype, op, a.data(), a.data(), 1000);
      run(GetParam(), dtype, op, b.data(), b.data(), 1000);
      EXPECT_EQ(a, b) << dtype_name(dtype) << " " << reduce_op_name(op);
    }
  }
}

// Every pair (a, b) of special values as (dst, src), in both roles.
template <typename T>
void expect_specials_match(Isa isa, DType dtype, const std::vector<T>& specials) {
  Bytes dst, src;
  for (T a : specials) {
    for (T b : specials) {
      dst.resize(dst.size() + sizeof(T));
      src.resize(src.size() + sizeof(T));
      std::memcpy(dst.data() + dst.size() - sizeof(T), &a, sizeof(T));
      std::memcpy(src.data() + src.size() - sizeof(T), &b, sizeof(T));
    }
  }
  for (ReduceOp op : kOps) expect_matches_scalar(isa, dtype, op, dst, src, 0, 0, dst.size() / sizeof(T));
}

TEST_P(ReduceKernelsTest, SpecialValuesMatchScalar) {
  using F = std::numeric_limits<float>;
  using D = std::numeric_limits<double>;
  std::vector<float> f32{0.0f, -0.0f, 1.0f, -1.5f, F::infinity(), -F::infinity(), F::quiet_NaN(), -F::quiet_NaN(),
                         std::bit_cast<float>(0x7f800001u), std::bit_cast<float>(0xffa12345u),  // signalling NaNs
                         std::bit_cast<float>(0x7fc0beefu), F::denorm_min(), -F::denorm_min(), F::min(), F::max(),
                         -F::max(), 0x1p-140f, 65504.0f, 65520.0f};
  std::vector<double> f64{0.0, -0.0, 1.0, -1.5, D::infinity(), -D::infinity(), D::quiet_NaN(), -D::quiet_NaN(),
                          std::bit_cast<double>(0x7ff0000000000001ull), std::bit_cast<double>(0xfff8dead0000beefull),
                          D::denorm_min(), -D::denorm_min(), D::min(), D::max(), -D::max()};
  std::vector<std::uint16_t> f16{0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xfd55,
                                 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x6800, 0x3c01};
  std::vector<std::uint16_t> bf16{0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffa5,
                                  0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3b80, 0x3f81};
  std::vector<std::int32_t> i32{0, 1, -1, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), 65536};
  std::vector<std::int64_t> i64{0, 1, -1, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                                0x100000000ll, 0x7fffffff, -0x80000001ll};
  std::vector<std::uint8_t> u8{0, 1, 2, 15, 16, 127, 128, 200, 255};
  expect_specials_match(GetParam(), DType::kF32, f32);
  expect_specials_match(GetParam(), DType::kF64, f64);
  expect_specials_match(GetParam(), DType::kF16, f16);
  expect_specials_match(GetParam(), DType::kBF16, bf16);
  expect_specials_match(GetParam(), DType::kI32, i32);
  expect_specials_match(GetParam(), DType::kI64, i64);
  expect_specials_match(GetParam(), DType::kU8, u8);
}

// Every 16-bit pattern as dst and as src, against a few partners: exercises widening and
// narrowing of every f16 / bf16 value, NaN payloads included.
TEST_P(ReduceKernelsTest, Every16BitPatternMatchesScalar) {
  Bytes all(0x10000 * 2);
  for (std::uint32_t h = 0; h < 0x10000; ++h) put(all, h, static_cast<std::uint16_t>(h));
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (std::uint16_t partner : {0x0000, 0x8000, 0x3c00, 0x3f80, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x7e01, 0xffc1}) {
      Bytes other(all.size());
      for (std::size_t i = 0; i < 0x10000; ++i) put(other, i, partner);
      for (ReduceOp op : kOps) {
        expect_matches_scalar(GetParam(), dtype, op, all, other, 0, 0, 0x10000);
        expect_matches_scalar(GetParam(), dtype, op, other, all, 0, 0, 0x10000);
      }
    }
  }
}

// The definitions themselves (reduce_kernels.h), checked on every path, at a vector position.
template <typename T>
T reduce_one(Isa isa, DType dtype, ReduceOp op, T a, T b) {
  std::vector<T> dst(37, T{}), src(37, T{});
  dst[20] = a;
  src[20] = b;
  run(isa, dtype, op, dst.data(), src.data(), dst.size());
  return dst[20];
}

void expect_defined_results(Isa isa) {
  SCOPED_TRACE(std::string(isa_name(isa)));
  auto bits = [](float f) { return std::bit_cast<std::uint32_t>(f); };
  float nan_a = std::bit_cast<float>(0x7fc0000au), nan_b = std::bit_cast<float>(0xffc0000bu);
  float snan = std::bit_cast<float>(0x7f800003u);
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kSum, nan_a, nan_b)), 0x7fc0000au);  // dst's NaN wins
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kProd, nan_b, nan_a)), 0xffc0000bu);
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kSum, snan, 1.0f)), 0x7fc00003u);  // quieted
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kMin, 1.0f, nan_a)), bits(1.0f));  // src NaN ignored
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kMax, nan_a, 1.0f)), 0x7fc0000au);  // dst NaN kept
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kMin, 0.0f, -0.0f)), bits(0.0f));  // dst's zero kept
  EXPECT_EQ(bits(reduce_one(isa, DType::kF32, ReduceOp::kMax, -0.0f, 0.0f)), bits(-0.0f));
  // f16: 65504 + 65504 overflows to Inf; 2048 + 1 is a tie that rounds to even (2048).
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kF16, ReduceOp::kSum, 0x7bff, 0x7bff), 0x7c00);
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kF16, ReduceOp::kSum, 0x6800, 0x3c00), 0x6800);
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kF16, ReduceOp::kSum, 0x6801, 0x3c00), 0x6802);  // 2050 + 1 -> 2052
  // bf16 ties: 1 + 2^-8 -> 1 (even); (1 + 2^-7) + 2^-8 -> 1 + 2^-6.
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kBF16, ReduceOp::kSum, 0x3f80, 0x3b80), 0x3f80);
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kBF16, ReduceOp::kSum, 0x3f81, 0x3b80), 0x3f82);
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kBF16, ReduceOp::kSum, 0x7f81, 0x3f80), 0x7fc1);  // NaN quieted
  EXPECT_EQ(reduce_one<std::uint16_t>(isa, DType::kBF16, ReduceOp::kProd, 0x7f7f, 0x4000), 0x7f80);  // overflow
  // Integers wrap.
  EXPECT_EQ(reduce_one<std::int32_t>(isa, DType::kI32, ReduceOp::kSum, std::numeric_limits<std::int32_t>::max(), 1),
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(reduce_one<std::int64_t>(isa, DType::kI64, ReduceOp::kProd, 0x100000001ll, 0x100000001ll), 0x200000001ll);
  EXPECT_EQ(reduce_one<std::uint8_t>(isa, DType::kU8, ReduceOp::kProd, 16, 17), 16);
}

TEST_P(ReduceKernelsTest, DefinedResults) { expect_defined_results(GetParam()); }

INSTANTIATE_TEST_SUITE_P(AllIsas, ReduceKernelsTest, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& param) { return std::string(isa_name(param.param)); });

// ---- dispatch ---------------------------------------------------------------------------

TEST(ReduceDispatchTest, ResolvesNamesAndAuto) {
  EXPECT_EQ(resolve_isa("auto"), best_isa());
  EXPECT_EQ(resolve_isa("scalar"), Isa::kScalar);
  EXPECT_TRUE(cpu_supports(best_isa()));
  for (Isa isa : kAllIsas) {
    if (cpu_supports(isa)) {
      EXPECT_EQ(resolve_isa(isa_name(isa)), isa);
    }
  }
}

TEST(ReduceDispatchTest, UnknownNameThrows) {
  try {
    resolve_isa("sse9");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("BRAID_KERNELS=sse9"), std::string::npos) << e.what();
  }
}

TEST(ReduceDispatchTest, UnsupportedChoiceThrows) {
  for (Isa isa : kAllIsas) {
    if (cpu_supports(isa)) continue;
    try {
      resolve_isa(isa_name(isa));
      FAIL() << "expected InvalidArgument for " << isa_name(isa);
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("cannot run the {} kernels", isa_name(isa))), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(kernels_for(isa), InvalidArgument);
    return;
  }
  GTEST_SKIP() << "this CPU supports every kernel set";
}

// Child bodies of EnvironmentForcesThePath: each exits with 0 on the expected outcome.
[[noreturn]] void forced_scalar_is_used() {
  ::setenv("BRAID_KERNELS", "scalar", 1);
  std::uint8_t a = 1;
  std::uint8_t b = 2;
  reduce_into(&a, &b, 1, DType::kU8, ReduceOp::kSum);
  std::exit(active_isa() == Isa::kScalar && &active_kernels() == &kScalarKernels && a == 3 ? 0 : 1);
}

[[noreturn]] void bad_setting_throws(const char* setting) {
  ::setenv("BRAID_KERNELS", setting, 1);
  std::uint8_t a = 1;
  std::uint8_t b = 2;
  try {
    reduce_into(&a, &b, 1, DType::kU8, ReduceOp::kSum);
  } catch (const InvalidArgument&) {
    std::exit(0);
  }
  std::exit(1);
}

// The cached choice is made once per process, so BRAID_KERNELS is tested in a fresh process
// ("threadsafe" death tests re-run this test binary for just this test).
TEST(ReduceDispatchTest, EnvironmentForcesThePath) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(forced_scalar_is_used(), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(bad_setting_throws("no-such-isa"), ::testing::ExitedWithCode(0), "");
  for (Isa isa : kAllIsas) {
    if (!cpu_supports(isa)) {
      std::string name(isa_name(isa));
      EXPECT_EXIT(bad_setting_throws(name.c_str()), ::testing::ExitedWithCode(0), "") << name;
    }
  }
}

}  // namespace
}  // namespace braid::kernels
