// IEEE binary16 and bfloat16 conversions (round-to-nearest-even; NaN and Inf preserved).
// Reductions on 16-bit types convert to fp32, accumulate, and convert back once.
#pragma once

#include <bit>
#include <cstdint>

namespace braid {

inline float half_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // Inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: value = mant * 2^-24
    float value = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(value) | sign);
  }
  return std::bit_cast<float>(bits);
}

inline std::uint16_t float_to_half(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN; keep NaN quiet and non-zero
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: Inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: round value * 2^24 to an integer (RNE)
    float scaled = std::bit_cast<float>(abs) * 0x1p24f;
    // Adding and subtracting 2^23 rounds to nearest even for |scaled| < 2^23.
    float rounded = (scaled + 0x1p23f) - 0x1p23f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(rounded));
  }
  std::uint32_t rounding = 0xfffu + ((abs >> 13) & 1u);
  abs += rounding;
  return static_cast<std::uint16_t>(sign | (((abs >> 23) - 112) << 10) | ((abs >> 13) & 0x3ffu));
}

inline float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

}  // namespace braid
