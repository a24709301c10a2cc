// AVX-512 reduction kernels (512-bit; AVX512F + AVX512BW, nothing from DQ or later). This file
// alone is compiled with -mavx512f -mavx512bw (CMakeLists.txt); the dispatcher uses its table
// only where CPUID reports both. The lane types mirror reduce_kernels_avx2.cc, whose comments
// explain why each one matches the scalar definition; differences are noted here.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "braid/base/reduce_kernels.h"
#include "braid/base/reduce_kernels_simd.h"

// GCC 12's avx512fintrin.h initialises _mm512_undefined_epi32() from itself, which trips
// -Wmaybe-uninitialized at every inlined intrinsic (GCC PR 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace braid::kernels {

namespace {

// ---- floating point -------------------------------------------------------------------
// The and/or/xor on __m512 are AVX512DQ; the integer forms below are AVX512F.

struct F32 {
  using Elem = float;
  using Reg = __m512;
  static constexpr std::size_t kWidth = 16;
  static constexpr DType kDType = DType::kF32;
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg first_nan(Reg a, Reg r) {
    __mmask16 is_nan = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    Reg quiet = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x00400000)));
    return _mm512_mask_mov_ps(r, is_nan, quiet);
  }
  static Reg add(Reg a, Reg b) { return first_nan(a, _mm512_add_ps(a, b)); }
  static Reg mul(Reg a, Reg b) { return first_nan(a, _mm512_mul_ps(a, b)); }
  static Reg min(Reg a, Reg b) { return _mm512_min_ps(b, a); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(b, a); }
};

struct F64 {
  using Elem = double;
  using Reg = __m512d;
  static constexpr std::size_t kWidth = 8;
  static constexpr DType kDType = DType::kF64;
  static Reg load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, Reg v) { _mm512_storeu_pd(p, v); }
  static Reg first_nan(Reg a, Reg r) {
    __mmask8 is_nan = _mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q);
    Reg quiet = _mm512_castsi512_pd(
        _mm512_or_si512(_mm512_castpd_si512(a), _mm512_set1_epi64(0x0008000000000000ll)));
    return _mm512_mask_mov_pd(r, is_nan, quiet);
  }
  static Reg add(Reg a, Reg b) { return first_nan(a, _mm512_add_pd(a, b)); }
  static Reg mul(Reg a, Reg b) { return first_nan(a, _mm512_mul_pd(a, b)); }
  static Reg min(Reg a, Reg b) { return _mm512_min_pd(b, a); }
  static Reg max(Reg a, Reg b) { return _mm512_max_pd(b, a); }
};

// ---- 16-bit floats: 32 elements widened to two fp32 registers --------------------------
struct F32Pair {
  __m512 lo, hi;
};

template <class Codec>
struct Widened : Codec {
  using Elem = std::uint16_t;
  using Reg = F32Pair;
  static constexpr std::size_t kWidth = 32;
  static Reg add(Reg a, Reg b) { return {F32::add(a.lo, b.lo), F32::add(a.hi, b.hi)}; }
  static Reg mul(Reg a, Reg b) { return {F32::mul(a.lo, b.lo), F32::mul(a.hi, b.hi)}; }
  static Reg min(Reg a, Reg b) { return {F32::min(a.lo, b.lo), F32::min(a.hi, b.hi)}; }
  static Reg max(Reg a, Reg b) { return {F32::max(a.lo, b.lo), F32::max(a.hi, b.hi)}; }
};

// The 512-bit F16C forms (vcvtph2ps / vcvtps2ph zmm) are AVX512F and round like F16C.
struct F16Codec {
  static constexpr DType kDType = DType::kF16;
  static F32Pair load(const std::uint16_t* p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)))};
  }
  static void store(std::uint16_t* p, F32Pair v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 16), _mm512_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT));
  }
};

// Same zero-interleave / packus pairing as AVX2 (both work per 128-bit lane, AVX512BW).
struct BF16Codec {
  static constexpr DType kDType = DType::kBF16;
  static F32Pair load(const std::uint16_t* p) {
    __m512i x = _mm512_loadu_si512(p);
    __m512i zero = _mm512_setzero_si512();
    return {_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, x)), _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, x))};
  }
  static __m512i narrow(__m512 v) {
    __m512i x = _mm512_castps_si512(v);
    __m512i top = _mm512_srli_epi32(x, 16);
    __m512i lsb = _mm512_and_si512(top, _mm512_set1_epi32(1));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    __mmask16 is_nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(rounded, is_nan, _mm512_or_si512(top, _mm512_set1_epi32(0x40)));
  }
  static void store(std::uint16_t* p, F32Pair v) {
    _mm512_storeu_si512(p, _mm512_packus_epi32(narrow(v.lo), narrow(v.hi)));
  }
};

// ---- integers (wrapping) ------------------------------------------------------------------
template <typename T, DType kType>
struct IntBase {
  using Elem = T;
  using Reg = __m512i;
  static constexpr std::size_t kWidth = 64 / sizeof(T);
  static constexpr DType kDType = kType;
  static Reg load(const T* p) { return _mm512_loadu_si512(p); }
  static void store(T* p, Reg v) { _mm512_storeu_si512(p, v); }
};

struct I32 : IntBase<std::int32_t, DType::kI32> {
  static Reg add(Reg a, Reg b) { return _mm512_add_epi32(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mullo_epi32(a, b); }
  static Reg min(Reg a, Reg b) { return _mm512_min_epi32(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_epi32(a, b); }
};

// 64-bit min/max exist in AVX512F; the low multiply (vpmullq) is DQ, so keep the schoolbook form.
struct I64 : IntBase<std::int64_t, DType::kI64> {
  static Reg add(Reg a, Reg b) { return _mm512_add_epi64(a, b); }
  static Reg mul(Reg a, Reg b) {
    Reg cross = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(a, 32), b),
                                 _mm512_mul_epu32(a, _mm512_srli_epi64(b, 32)));
    return _mm512_add_epi64(_mm512_mul_epu32(a, b), _mm512_slli_epi64(cross, 32));
  }
  static Reg min(Reg a, Reg b) { return _mm512_min_epi64(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_epi64(a, b); }
};

struct U8 : IntBase<std::uint8_t, DType::kU8> {
  static Reg add(Reg a, Reg b) { return _mm512_add_epi8(a, b); }
  static Reg mul(Reg a, Reg b) {
    Reg even = _mm512_and_si512(_mm512_mullo_epi16(a, b), _mm512_set1_epi16(0x00ff));
    Reg odd = _mm512_slli_epi16(_mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8)), 8);
    return _mm512_or_si512(even, odd);
  }
  static Reg min(Reg a, Reg b) { return _mm512_min_epu8(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_epu8(a, b); }
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
constinit const KernelTable kAvx512Kernels = make_table();

}  // namespace braid::kernels
