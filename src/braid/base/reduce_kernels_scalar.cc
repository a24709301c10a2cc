// The portable reduction kernels: the reference every SIMD table must match bit for bit
// (Note [kernel identity] in reduce_kernels.h), the fallback on CPUs without AVX2, and the
// tail loop of the SIMD kernels. Compiled for the baseline ISA; the compiler may vectorise
// these loops with SSE2, which changes no result.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "braid/base/half.h"
#include "braid/base/reduce_kernels.h"

namespace braid::kernels {

namespace {

// Integers are combined in their unsigned type: wrapping is then defined behaviour (signed
// overflow is not), and the conversion back is modular in C++20.
template <typename T>
using Wrap = std::make_unsigned_t<T>;

// x86's NaN rule made explicit (reduce_kernels.h): a NaN in dst wins, quieted.
inline float first_nan(float a, float r) {
  return a != a ? std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) | 0x00400000u) : r;
}
inline double first_nan(double a, double r) {
  return a != a ? std::bit_cast<double>(std::bit_cast<std::uint64_t>(a) | 0x0008000000000000ull) : r;
}

struct Sum {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return first_nan(a, a + b);
    } else {
      return static_cast<T>(static_cast<Wrap<T>>(static_cast<Wrap<T>>(a) + static_cast<Wrap<T>>(b)));
    }
  }
};

struct Prod {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return first_nan(a, a * b);
    } else {
      return static_cast<T>(static_cast<Wrap<T>>(static_cast<Wrap<T>>(a) * static_cast<Wrap<T>>(b)));
    }
  }
};

struct Min {
  template <typename T>
  static T apply(T a, T b) { return std::min(a, b); }
};

struct Max {
  template <typename T>
  static T apply(T a, T b) { return std::max(a, b); }
};

template <typename T, typename Op>
void reduce_plain(void* dst, const void* src, std::size_t count) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < count; ++i) d[i] = Op::apply(d[i], s[i]);
}

// 16-bit floats: widen both operands exactly, combine in fp32, narrow once (RNE).
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float), typename Op>
void reduce_16bit(void* dst, const void* src, std::size_t count) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* s = static_cast<const std::uint16_t*>(src);
  for (std::size_t i = 0; i < count; ++i) d[i] = FromFloat(Op::apply(ToFloat(d[i]), ToFloat(s[i])));
}

template <typename T>
constexpr auto plain_row() {
  return std::to_array<ReduceFn>({&reduce_plain<T, Sum>, &reduce_plain<T, Sum>, &reduce_plain<T, Min>,
                                  &reduce_plain<T, Max>, &reduce_plain<T, Prod>});
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
constexpr auto half_row() {
  return std::to_array<ReduceFn>(
      {&reduce_16bit<ToFloat, FromFloat, Sum>, &reduce_16bit<ToFloat, FromFloat, Sum>,
       &reduce_16bit<ToFloat, FromFloat, Min>, &reduce_16bit<ToFloat, FromFloat, Max>,
       &reduce_16bit<ToFloat, FromFloat, Prod>});
}

constexpr KernelTable make_table() {
  KernelTable table{};
  auto set = [&table](DType dtype, const auto& row) {
    for (int op = 0; op < kNumReduceOps; ++op) table.reduce[static_cast<int>(dtype)][op] = row[op];
  };
  set(DType::kF32, plain_row<float>());
  set(DType::kF64, plain_row<double>());
  set(DType::kI32, plain_row<std::int32_t>());
  set(DType::kI64, plain_row<std::int64_t>());
  set(DType::kU8, plain_row<std::uint8_t>());
  set(DType::kF16, half_row<half_to_float, float_to_half>());
  set(DType::kBF16, half_row<bf16_to_float, float_to_bf16>());
  return table;
}

}  // namespace

constinit const KernelTable kScalarKernels = make_table();

}  // namespace braid::kernels
