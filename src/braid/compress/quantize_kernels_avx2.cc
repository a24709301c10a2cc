// AVX2 + F16C quantising kernels (256-bit). This file alone is compiled with -mavx2 -mf16c
// -mfma (CMakeLists.txt); the dispatcher uses its table only where CPUID reports AVX2 and F16C.
// Each kernel reproduces the scalar definition (Note [quantize identity] in
// quantize_kernels.h) bit for bit, and hands its remainder, and any head before a 32-byte
// boundary (streaming stores) or a byte boundary (pack_signs), to the scalar kernel, which is
// by definition identical.
//
// As in base/reduce_kernels_avx2.cc, everything here has internal linkage and calls no inline
// function with external linkage but the always-inline intrinsics: otherwise the linker could
// keep this file's AVX2 copy of such a function for baseline callers (SIGILL on older CPUs).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "braid/compress/quantize_kernels.h"

namespace braid::compress {

namespace {

const QuantizeKernels& tail = kScalarQuantizeKernels;

// GCC would otherwise fuse a product and the add that follows into one FMA (this file is
// built with -mfma), which rounds once instead of twice.
inline __m256 opaque(__m256 v) {
  asm("" : "+x"(v));
  return v;
}

inline __m256 quiet(__m256 v) { return _mm256_or_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000))); }

// acc + d with acc's NaN winning, then d's (the scalar rule, independent of operand order).
inline __m256 accumulate(__m256 acc, __m256 d) {
  __m256 sum = _mm256_add_ps(acc, opaque(d));
  sum = _mm256_blendv_ps(sum, quiet(d), _mm256_cmp_ps(d, d, _CMP_UNORD_Q));
  return _mm256_blendv_ps(sum, quiet(acc), _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q));
}

template <Store kMode>
inline void put(float* out, __m256 d) {
  if constexpr (kMode == Store::kAccumulate) {
    _mm256_storeu_ps(out, accumulate(_mm256_loadu_ps(out), d));
  } else if constexpr (kMode == Store::kStream) {
    _mm256_stream_ps(out, d);  // aligned: see aligned_head
  } else {
    _mm256_storeu_ps(out, d);
  }
}

// Streaming stores need a 32-byte aligned destination: the elements (of `size` bytes) before
// the first boundary go through the scalar kernel. REQUIRES: p aligned to `size`.
inline std::size_t aligned_head(const void* p, std::size_t size, std::size_t count) {
  std::size_t head = ((32 - (reinterpret_cast<std::uintptr_t>(p) & 31)) & 31) / size;
  return head < count ? head : count;
}

template <Store kMode>
inline std::size_t head_for(const float* out, std::size_t count) {
  return kMode == Store::kStream ? aligned_head(out, sizeof(float), count) : 0;
}

inline __m256 abs_ps(__m256 v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }

// ---- fp16 / bf16 ------------------------------------------------------------------------

template <bool kStream>
inline void store128(std::byte* p, __m128i v) {
  if constexpr (kStream) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
  }
}

// vcvtps2ph with an immediate rounding mode rounds to nearest even regardless of MXCSR.
template <bool kStream>
void to_fp16(const float* x, std::size_t count, std::byte* out) {
  std::size_t i = kStream ? aligned_head(out, 2, count) : 0;
  if (i > 0) tail.to_fp16(x, i, out, Store::kOverwrite);
  for (; i + 16 <= count; i += 16) {
    store128<kStream>(out + 2 * i, _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    store128<kStream>(out + 2 * i + 16, _mm256_cvtps_ph(_mm256_loadu_ps(x + i + 8), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i + 8 <= count; i += 8) {
    store128<kStream>(out + 2 * i, _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < count) tail.to_fp16(x + i, count - i, out + 2 * i, Store::kOverwrite);
}

template <Store kMode>
void from_fp16(const void* packed, std::size_t count, float* out) {
  const auto* in = static_cast<const std::byte*>(packed);
  std::size_t i = head_for<kMode>(out, count);
  if (i > 0) tail.from_fp16(in, i, out, kMode);
  for (; i + 16 <= count; i += 16) {
    __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i)));
    __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i + 16)));
    put<kMode>(out + i, d0);
    put<kMode>(out + i + 8, d1);
  }
  for (; i + 8 <= count; i += 8) {
    put<kMode>(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i))));
  }
  if (i < count) tail.from_fp16(in + 2 * i, count - i, out + i, kMode);
}

// float_to_bf16 with integer ops: NaN -> top half | 0x40 (quiet); else add 0x7fff plus the
// lowest kept bit (round to nearest even) and keep the top half. Results fit in 16 bits, so
// the signed saturation of packus never triggers.
inline __m256i narrow_bf16(__m256 v) {
  __m256i x = _mm256_castps_si256(v);
  __m256i top = _mm256_srli_epi32(x, 16);
  __m256i lsb = _mm256_and_si256(top, _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(top, _mm256_set1_epi32(0x40)), is_nan);
}

template <bool kStream>
void to_bf16(const float* x, std::size_t count, std::byte* out) {
  std::size_t i = kStream ? aligned_head(out, 2, count) : 0;
  if (i > 0) tail.to_bf16(x, i, out, Store::kOverwrite);
  for (; i + 16 <= count; i += 16) {
    // packus works within 128-bit lanes: (a0-3 b0-3 | a4-7 b4-7); the permute restores order.
    __m256i lo = narrow_bf16(_mm256_loadu_ps(x + i)), hi = narrow_bf16(_mm256_loadu_ps(x + i + 8));
    __m256i in_order = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    if constexpr (kStream) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + 2 * i), in_order);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), in_order);
    }
  }
  if (i < count) tail.to_bf16(x + i, count - i, out + 2 * i, Store::kOverwrite);
}

template <Store kMode>
void from_bf16(const void* packed, std::size_t count, float* out) {
  const auto* in = static_cast<const std::byte*>(packed);
  std::size_t i = head_for<kMode>(out, count);
  if (i > 0) tail.from_bf16(in, i, out, kMode);
  for (; i + 8 <= count; i += 8) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i)));
    put<kMode>(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  if (i < count) tail.from_bf16(in + 2 * i, count - i, out + i, kMode);
}

// ---- int8 -------------------------------------------------------------------------------

// |x| as bits compares as an unsigned integer exactly as |x| compares as a float, and puts
// NaN and Inf above every finite value.
std::uint32_t max_abs_bits(const float* x, std::size_t count) {
  __m256i m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    m0 = _mm256_max_epu32(m0, _mm256_castps_si256(abs_ps(_mm256_loadu_ps(x + i))));
    m1 = _mm256_max_epu32(m1, _mm256_castps_si256(abs_ps(_mm256_loadu_ps(x + i + 8))));
  }
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(_mm256_max_epu32(m0, m1)),
                            _mm256_extracti128_si256(_mm256_max_epu32(m0, m1), 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4e));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xb1));
  auto max = static_cast<std::uint32_t>(_mm_cvtsi128_si32(m));
  std::uint32_t rest = tail.max_abs_bits(x + i, count - i);
  return rest > max ? rest : max;
}

inline __m256i quantize8(const float* x, __m256 inv) {
  __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x), inv);
  p = _mm256_min_ps(_mm256_max_ps(p, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(p);  // MXCSR's round-to-nearest-even
}

void quantize_int8(const float* x, std::size_t count, float inv, std::int8_t* q) {
  __m256 vinv = _mm256_set1_ps(inv);
  // packs_epi32 then packs_epi16 leave the four 4-byte groups of each input interleaved
  // across the 128-bit lanes: (i0lo i1lo i2lo i3lo | i0hi i1hi i2hi i3hi).
  __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m256i a = _mm256_packs_epi32(quantize8(x + i, vinv), quantize8(x + i + 8, vinv));
    __m256i b = _mm256_packs_epi32(quantize8(x + i + 16, vinv), quantize8(x + i + 24, vinv));
    __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), bytes);
  }
  if (i < count) tail.quantize_int8(x + i, count - i, inv, q + i);
}

template <Store kMode>
void dequantize_int8(const std::int8_t* q, std::size_t count, float scale, float* out) {
  std::size_t i = head_for<kMode>(out, count);
  if (i > 0) tail.dequantize_int8(q, i, scale, out, kMode);
  __m256 vscale = _mm256_set1_ps(scale);
  for (; i + 16 <= count; i += 16) {
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i));
    __m256 d0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), vscale);
    __m256 d1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8))), vscale);
    put<kMode>(out + i, d0);
    put<kMode>(out + i + 8, d1);
  }
  if (i < count) tail.dequantize_int8(q + i, count - i, scale, out + i, kMode);
}

// ---- sign -------------------------------------------------------------------------------

// Lane j of the two double accumulators (lanes 0-3, 4-7) receives x[i] for i % 8 == j, in
// order: the scalar kernel's summation exactly. Exact widening, one double add per element.
void sum_abs_lanes(const float* x, std::size_t count, double lanes[8]) {
  __m256d lo = _mm256_loadu_pd(lanes), hi = _mm256_loadu_pd(lanes + 4);
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 v = abs_ps(_mm256_loadu_ps(x + i));
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  _mm256_storeu_pd(lanes, lo);
  _mm256_storeu_pd(lanes + 4, hi);
  if (i < count) tail.sum_abs_lanes(x + i, count - i, lanes);  // i % 8 == 0: lanes stay aligned
}

void pack_signs(const float* x, std::size_t count, void* packed, std::size_t first_bit) {
  auto* bytes = static_cast<std::uint8_t*>(packed);
  std::size_t i = 0;
  if (first_bit % 8 != 0) {  // the head up to a byte boundary shares its byte with the block before
    i = 8 - first_bit % 8 < count ? 8 - first_bit % 8 : count;
    tail.pack_signs(x, i, packed, first_bit);
  }
  // vmovmskps gathers the 8 sign bits, first element in bit 0.
  for (; i + 32 <= count; i += 32) {
    auto word = static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i))) |
                static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i + 8))) << 8 |
                static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i + 16))) << 16 |
                static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i + 24))) << 24;
    std::memcpy(bytes + (first_bit + i) / 8, &word, 4);
  }
  for (; i + 8 <= count; i += 8) {
    bytes[(first_bit + i) / 8] = static_cast<std::uint8_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i)));
  }
  if (i < count) tail.pack_signs(x + i, count - i, packed, first_bit + i);
}

// The 32 (8) bits from bit `bit` on, reading only bytes that hold some of them: an unaligned
// start costs a shift instead of a scalar head, so any block size runs at full speed.
inline std::uint32_t bits32_at(const std::uint8_t* bytes, std::size_t bit) {
  std::uint32_t word;
  std::memcpy(&word, bytes + bit / 8, 4);
  unsigned shift = bit % 8;
  return shift == 0 ? word : (word >> shift) | static_cast<std::uint32_t>(bytes[bit / 8 + 4]) << (32 - shift);
}

inline std::uint32_t bits8_at(const std::uint8_t* bytes, std::size_t bit) {
  unsigned shift = bit % 8;
  std::uint32_t low = bytes[bit / 8];
  return shift == 0 ? low : ((low >> shift) | static_cast<std::uint32_t>(bytes[bit / 8 + 1]) << (8 - shift)) & 0xff;
}

template <Store kMode>
void unpack_signs(const void* packed, std::size_t first_bit, std::size_t count, float scale, float* out) {
  const auto* bytes = static_cast<const std::uint8_t*>(packed);
  std::size_t i = head_for<kMode>(out, count);
  if (i > 0) tail.unpack_signs(packed, first_bit, i, scale, out, kMode);
  // Element j of a 32-bit word: shifting the word left by 31 - j puts bit j in the sign
  // position; one broadcast serves 32 elements.
  __m256i shifts = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
  __m256i eight = _mm256_set1_epi32(8);
  __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  __m256 vscale = _mm256_set1_ps(scale);
  auto signed_scale = [&](__m256i word, __m256i shift) {
    return _mm256_xor_ps(vscale, _mm256_castsi256_ps(_mm256_and_si256(_mm256_sllv_epi32(word, shift), sign)));
  };
  for (; i + 32 <= count; i += 32) {
    __m256i word = _mm256_set1_epi32(static_cast<int>(bits32_at(bytes, first_bit + i)));
    __m256i shift1 = _mm256_sub_epi32(shifts, eight), shift2 = _mm256_sub_epi32(shift1, eight);
    put<kMode>(out + i, signed_scale(word, shifts));
    put<kMode>(out + i + 8, signed_scale(word, shift1));
    put<kMode>(out + i + 16, signed_scale(word, shift2));
    put<kMode>(out + i + 24, signed_scale(word, _mm256_sub_epi32(shift2, eight)));
  }
  for (; i + 8 <= count; i += 8) {
    put<kMode>(out + i, signed_scale(_mm256_set1_epi32(static_cast<int>(bits8_at(bytes, first_bit + i))), shifts));
  }
  if (i < count) tail.unpack_signs(packed, first_bit + i, count - i, scale, out + i, kMode);
}

// The table takes one function per kernel; the store mode picks the instantiation.
void from_fp16_entry(const void* packed, std::size_t count, float* out, Store store) {
  switch (store) {
    case Store::kOverwrite: return from_fp16<Store::kOverwrite>(packed, count, out);
    case Store::kStream: return from_fp16<Store::kStream>(packed, count, out);
    case Store::kAccumulate: return from_fp16<Store::kAccumulate>(packed, count, out);
  }
}

void from_bf16_entry(const void* packed, std::size_t count, float* out, Store store) {
  switch (store) {
    case Store::kOverwrite: return from_bf16<Store::kOverwrite>(packed, count, out);
    case Store::kStream: return from_bf16<Store::kStream>(packed, count, out);
    case Store::kAccumulate: return from_bf16<Store::kAccumulate>(packed, count, out);
  }
}

void dequantize_int8_entry(const std::int8_t* q, std::size_t count, float scale, float* out, Store store) {
  switch (store) {
    case Store::kOverwrite: return dequantize_int8<Store::kOverwrite>(q, count, scale, out);
    case Store::kStream: return dequantize_int8<Store::kStream>(q, count, scale, out);
    case Store::kAccumulate: return dequantize_int8<Store::kAccumulate>(q, count, scale, out);
  }
}

void unpack_signs_entry(const void* packed, std::size_t first_bit, std::size_t count, float scale, float* out,
                        Store store) {
  switch (store) {
    case Store::kOverwrite: return unpack_signs<Store::kOverwrite>(packed, first_bit, count, scale, out);
    case Store::kStream: return unpack_signs<Store::kStream>(packed, first_bit, count, scale, out);
    case Store::kAccumulate: return unpack_signs<Store::kAccumulate>(packed, first_bit, count, scale, out);
  }
}

// Narrowing streams only where 16-bit stores can reach a 32-byte boundary (an even address).
void to_fp16_entry(const float* x, std::size_t count, void* packed, Store store) {
  auto* out = static_cast<std::byte*>(packed);
  bool stream = store == Store::kStream && reinterpret_cast<std::uintptr_t>(packed) % 2 == 0;
  stream ? to_fp16<true>(x, count, out) : to_fp16<false>(x, count, out);
}

void to_bf16_entry(const float* x, std::size_t count, void* packed, Store store) {
  auto* out = static_cast<std::byte*>(packed);
  bool stream = store == Store::kStream && reinterpret_cast<std::uintptr_t>(packed) % 2 == 0;
  stream ? to_bf16<true>(x, count, out) : to_bf16<false>(x, count, out);
}

void stream_fence() { _mm_sfence(); }

}  // namespace

const QuantizeKernels kAvx2QuantizeKernels = {
    .to_fp16 = to_fp16_entry,
    .to_bf16 = to_bf16_entry,
    .from_fp16 = from_fp16_entry,
    .from_bf16 = from_bf16_entry,
    .max_abs_bits = max_abs_bits,
    .quantize_int8 = quantize_int8,
    .dequantize_int8 = dequantize_int8_entry,
    .sum_abs_lanes = sum_abs_lanes,
    .pack_signs = pack_signs,
    .unpack_signs = unpack_signs_entry,
    .stream_fence = stream_fence,
};

}  // namespace braid::compress
