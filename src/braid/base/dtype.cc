#include "braid/base/dtype.h"

namespace braid {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float" || name == "float32") return DType::kF32;
  if (name == "f64" || name == "double" || name == "float64") return DType::kF64;
  if (name == "f16" || name == "half" || name == "float16") return DType::kF16;
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "i32" || name == "int" || name == "int32") return DType::kI32;
  if (name == "i64" || name == "int64") return DType::kI64;
  if (name == "u8" || name == "uint8" || name == "byte") return DType::kU8;
  return std::nullopt;
}

bool is_valid_dtype(std::uint8_t raw) { return raw < kNumDTypes; }

}  // namespace braid
