// Element types braid moves and reduces. The public API is type-erased (a DType tag plus a
// byte pointer) so that every collective is compiled once, not once per element type; the
// kernels that need the type dispatch on the tag in one place (reduce_op.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace braid {

enum class DType : std::uint8_t { kF32 = 0, kF64 = 1, kF16 = 2, kBF16 = 3, kI32 = 4, kI64 = 5, kU8 = 6 };

inline constexpr int kNumDTypes = 7;

// Inline: every collective call asks it several times on its fast path.
constexpr std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  return 1;
}
std::string_view dtype_name(DType dtype);          // "f32", "bf16", ...
std::optional<DType> parse_dtype(std::string_view name);  // accepts the names above and "float", "half", ...
bool is_valid_dtype(std::uint8_t raw);

}  // namespace braid
