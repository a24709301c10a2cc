// The portable quantising kernels: the definition every SIMD table must match bit for bit
// (Note [quantize identity] in quantize_kernels.h), the fallback on CPUs without AVX2, and the
// tail loop of the SIMD kernels. Compiled for the baseline ISA.
#include <bit>
#include <cstdint>
#include <cstring>

#include "braid/base/half.h"
#include "braid/compress/quantize_kernels.h"

namespace braid::compress {

namespace {

// Hides v from the optimiser so that a product is rounded before a following add: without it
// a build with FMA enabled (-march=native) could contract a*b+c (Note [quantize identity]).
inline float opaque(float v) {
#if defined(__GNUC__) && defined(__x86_64__)
  asm("" : "+x"(v));
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(v));
#endif
  return v;
}

inline float quiet(float v) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) | 0x00400000u); }

inline float accumulate(float acc, float d) {
  if (acc != acc) return quiet(acc);
  if (d != d) return quiet(d);
  return acc + opaque(d);
}

// The portable code has no streaming stores: kStream writes as kOverwrite does.
inline void store(float* out, std::size_t i, float d, Store mode) {
  out[i] = mode == Store::kAccumulate ? accumulate(out[i], d) : d;
}

inline std::uint16_t load_u16(const void* packed, std::size_t i) {
  std::uint16_t v;
  std::memcpy(&v, static_cast<const std::byte*>(packed) + 2 * i, 2);
  return v;
}

inline void store_u16(void* packed, std::size_t i, std::uint16_t v) {
  std::memcpy(static_cast<std::byte*>(packed) + 2 * i, &v, 2);
}

// ---- fp16 / bf16 ------------------------------------------------------------------------

void to_fp16(const float* x, std::size_t count, void* packed, Store) {
  for (std::size_t i = 0; i < count; ++i) store_u16(packed, i, float_to_half(x[i]));
}

void to_bf16(const float* x, std::size_t count, void* packed, Store) {
  for (std::size_t i = 0; i < count; ++i) store_u16(packed, i, float_to_bf16(x[i]));
}

void from_fp16(const void* packed, std::size_t count, float* out, Store mode) {
  for (std::size_t i = 0; i < count; ++i) {
    float d = half_to_float(load_u16(packed, i));
    store(out, i, d != d ? quiet(d) : d, mode);  // vcvtph2ps quiets a signalling NaN
  }
}

void from_bf16(const void* packed, std::size_t count, float* out, Store mode) {
  for (std::size_t i = 0; i < count; ++i) store(out, i, bf16_to_float(load_u16(packed, i)), mode);
}

// ---- int8 -------------------------------------------------------------------------------

std::uint32_t max_abs_bits(const float* x, std::size_t count) {
  std::uint32_t max = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(x[i]) & 0x7fffffffu;
    max = bits > max ? bits : max;
  }
  return max;
}

void quantize_int8(const float* x, std::size_t count, float inv, std::int8_t* q) {
  constexpr float kRound = 0x1.8p23f;  // adding and subtracting 1.5 * 2^23 rounds |p| < 2^22 to nearest even
  for (std::size_t i = 0; i < count; ++i) {
    float p = opaque(x[i] * inv);
    p = p < -127.0f ? -127.0f : (p > 127.0f ? 127.0f : p);
    q[i] = static_cast<std::int8_t>((p + kRound) - kRound);
  }
}

void dequantize_int8(const std::int8_t* q, std::size_t count, float scale, float* out, Store mode) {
  for (std::size_t i = 0; i < count; ++i) store(out, i, static_cast<float>(q[i]) * scale, mode);
}

// ---- sign -------------------------------------------------------------------------------

void sum_abs_lanes(const float* x, std::size_t count, double lanes[8]) {
  for (std::size_t i = 0; i < count; ++i) {
    lanes[i % 8] += static_cast<double>(std::bit_cast<float>(std::bit_cast<std::uint32_t>(x[i]) & 0x7fffffffu));
  }
}

inline unsigned sign_of(float v) { return std::bit_cast<std::uint32_t>(v) >> 31; }

void pack_signs(const float* x, std::size_t count, void* packed, std::size_t first_bit) {
  auto* bytes = static_cast<std::uint8_t*>(packed);
  std::size_t i = 0;
  // Whole bytes are assembled in a register; only the partly covered bytes at either end are
  // read, modified and written.
  for (; i < count && (first_bit + i) % 8 != 0; ++i) {
    std::size_t bit = first_bit + i;
    auto mask = static_cast<std::uint8_t>(1u << (bit % 8));
    bytes[bit / 8] = static_cast<std::uint8_t>(sign_of(x[i]) ? bytes[bit / 8] | mask : bytes[bit / 8] & ~mask);
  }
  for (; i + 8 <= count; i += 8) {
    unsigned byte = 0;
    for (unsigned j = 0; j < 8; ++j) byte |= sign_of(x[i + j]) << j;
    bytes[(first_bit + i) / 8] = static_cast<std::uint8_t>(byte);
  }
  for (; i < count; ++i) {
    std::size_t bit = first_bit + i;
    auto mask = static_cast<std::uint8_t>(1u << (bit % 8));
    bytes[bit / 8] = static_cast<std::uint8_t>(sign_of(x[i]) ? bytes[bit / 8] | mask : bytes[bit / 8] & ~mask);
  }
}

void unpack_signs(const void* packed, std::size_t first_bit, std::size_t count, float scale, float* out,
                  Store mode) {
  const auto* bytes = static_cast<const std::uint8_t*>(packed);
  std::uint32_t scale_bits = std::bit_cast<std::uint32_t>(scale);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t bit = first_bit + i;
    std::uint32_t negative = (bytes[bit / 8] >> (bit % 8)) & 1u;
    store(out, i, std::bit_cast<float>(scale_bits ^ (negative << 31)), mode);
  }
}

void no_fence() {}

}  // namespace

const QuantizeKernels kScalarQuantizeKernels = {
    .to_fp16 = to_fp16,
    .to_bf16 = to_bf16,
    .from_fp16 = from_fp16,
    .from_bf16 = from_bf16,
    .max_abs_bits = max_abs_bits,
    .quantize_int8 = quantize_int8,
    .dequantize_int8 = dequantize_int8,
    .sum_abs_lanes = sum_abs_lanes,
    .pack_signs = pack_signs,
    .unpack_signs = unpack_signs,
    .stream_fence = no_fence,
};

}  // namespace braid::compress
