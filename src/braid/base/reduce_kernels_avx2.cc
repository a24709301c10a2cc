// AVX2 + F16C reduction kernels (256-bit). This file alone is compiled with -mavx2 -mf16c
// (CMakeLists.txt); the dispatcher uses its table only where CPUID reports both. Each lane
// type reproduces the scalar definition in reduce_kernels.h bit for bit; the comments say
// which instruction property that relies on.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "braid/base/reduce_kernels.h"
#include "braid/base/reduce_kernels_simd.h"

namespace braid::kernels {

namespace {

// ---- floating point -------------------------------------------------------------------
// vminps(x, y) is "x < y ? x : y" and returns y when either is NaN: with x = src, y = dst it
// is std::min(dst, src) exactly, zeros' signs and NaNs included. Likewise vmaxps.

struct F32 {
  using Elem = float;
  using Reg = __m256;
  static constexpr std::size_t kWidth = 8;
  static constexpr DType kDType = DType::kF32;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  // A NaN in a wins, quieted (see reduce_kernels.h: operand order of a commutative add is the
  // compiler's choice, so the rule is applied explicitly).
  static Reg first_nan(Reg a, Reg r) {
    Reg is_nan = _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
    Reg quiet = _mm256_or_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000)));
    return _mm256_blendv_ps(r, quiet, is_nan);
  }
  static Reg add(Reg a, Reg b) { return first_nan(a, _mm256_add_ps(a, b)); }
  static Reg mul(Reg a, Reg b) { return first_nan(a, _mm256_mul_ps(a, b)); }
  static Reg min(Reg a, Reg b) { return _mm256_min_ps(b, a); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(b, a); }
};

struct F64 {
  using Elem = double;
  using Reg = __m256d;
  static constexpr std::size_t kWidth = 4;
  static constexpr DType kDType = DType::kF64;
  static Reg load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, Reg v) { _mm256_storeu_pd(p, v); }
  static Reg first_nan(Reg a, Reg r) {
    Reg is_nan = _mm256_cmp_pd(a, a, _CMP_UNORD_Q);
    Reg quiet = _mm256_or_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(0x0008000000000000ll)));
    return _mm256_blendv_pd(r, quiet, is_nan);
  }
  static Reg add(Reg a, Reg b) { return first_nan(a, _mm256_add_pd(a, b)); }
  static Reg mul(Reg a, Reg b) { return first_nan(a, _mm256_mul_pd(a, b)); }
  static Reg min(Reg a, Reg b) { return _mm256_min_pd(b, a); }
  static Reg max(Reg a, Reg b) { return _mm256_max_pd(b, a); }
};

// ---- 16-bit floats: 16 elements widened to two fp32 registers --------------------------
struct F32Pair {
  __m256 lo, hi;
};

template <class Codec>
struct Widened : Codec {
  using Elem = std::uint16_t;
  using Reg = F32Pair;
  static constexpr std::size_t kWidth = 16;
  static Reg add(Reg a, Reg b) { return {F32::add(a.lo, b.lo), F32::add(a.hi, b.hi)}; }
  static Reg mul(Reg a, Reg b) { return {F32::mul(a.lo, b.lo), F32::mul(a.hi, b.hi)}; }
  static Reg min(Reg a, Reg b) { return {F32::min(a.lo, b.lo), F32::min(a.hi, b.hi)}; }
  static Reg max(Reg a, Reg b) { return {F32::max(a.lo, b.lo), F32::max(a.hi, b.hi)}; }
};

// F16C converts exactly when widening and rounds to nearest even when narrowing; it keeps Inf,
// and quiets NaNs keeping the top payload bits, as float_to_half does.
struct F16Codec {
  static constexpr DType kDType = DType::kF16;
  static F32Pair load(const std::uint16_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
  }
  static void store(std::uint16_t* p, F32Pair v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT));
  }
};

// bf16 -> fp32 is a 16-bit shift. Interleaving with zeros (unpacklo/hi) does it, in an order
// that packus_epi32 undoes exactly, so no cross-lane permute is needed either way.
struct BF16Codec {
  static constexpr DType kDType = DType::kBF16;
  static F32Pair load(const std::uint16_t* p) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m256i zero = _mm256_setzero_si256();
    return {_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x)), _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x))};
  }
  // float_to_bf16 with integer ops: NaN -> top half | 0x40 (quiet); else add 0x7fff plus the
  // lowest kept bit (round to nearest even) and keep the top half. Results fit in 16 bits,
  // so the signed-to-unsigned saturation of packus never triggers.
  static __m256i narrow(__m256 v) {
    __m256i x = _mm256_castps_si256(v);
    __m256i top = _mm256_srli_epi32(x, 16);
    __m256i lsb = _mm256_and_si256(top, _mm256_set1_epi32(1));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    __m256i quiet_nan = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
  }
  static void store(std::uint16_t* p, F32Pair v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_packus_epi32(narrow(v.lo), narrow(v.hi)));
  }
};

// ---- integers (wrapping) ------------------------------------------------------------------
template <typename T, DType kType>
struct IntBase {
  using Elem = T;
  using Reg = __m256i;
  static constexpr std::size_t kWidth = 32 / sizeof(T);
  static constexpr DType kDType = kType;
  static Reg load(const T* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(T* p, Reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
};

struct I32 : IntBase<std::int32_t, DType::kI32> {
  static Reg add(Reg a, Reg b) { return _mm256_add_epi32(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mullo_epi32(a, b); }
  static Reg min(Reg a, Reg b) { return _mm256_min_epi32(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_epi32(a, b); }
};

// AVX2 has no 64-bit min, max or low multiply: compare + blend, and the schoolbook product
// lo*lo + ((hi*lo + lo*hi) << 32), which is the low 64 bits of the full product.
struct I64 : IntBase<std::int64_t, DType::kI64> {
  static Reg add(Reg a, Reg b) { return _mm256_add_epi64(a, b); }
  static Reg mul(Reg a, Reg b) {
    Reg cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                 _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
  }
  static Reg min(Reg a, Reg b) { return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)); }
  static Reg max(Reg a, Reg b) { return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(b, a)); }
};

// No 8-bit multiply either: multiply the even and the odd bytes as 16-bit lanes (the low
// byte of a 16-bit product depends only on the low bytes) and merge.
struct U8 : IntBase<std::uint8_t, DType::kU8> {
  static Reg add(Reg a, Reg b) { return _mm256_add_epi8(a, b); }
  static Reg mul(Reg a, Reg b) {
    Reg even = _mm256_and_si256(_mm256_mullo_epi16(a, b), _mm256_set1_epi16(0x00ff));
    Reg odd = _mm256_slli_epi16(_mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8)), 8);
    return _mm256_or_si256(even, odd);
  }
  static Reg min(Reg a, Reg b) { return _mm256_min_epu8(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_epu8(a, b); }
};

constexpr KernelTable make_table() {
  KernelTable table{};
  simd::fill_row<F32>(table);
  simd::fill_row<F64>(table);
  simd::fill_row<Widened<F16Codec>>(table);
  simd::fill_row<Widened<BF16Codec>>(table);
  simd::fill_row<I32>(table);
  simd::fill_row<I64>(table);
  simd::fill_row<U8>(table);
  return table;
}

}  // namespace

// Plain data, constant-initialised: nothing here runs before the dispatcher has chosen it.
constinit const KernelTable kAvx2Kernels = make_table();

}  // namespace braid::kernels
