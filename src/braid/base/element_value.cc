#include "braid/base/element_value.h"

#include <cstring>

#include "braid/base/half.h"

namespace braid {

namespace {

template <typename T>
void put(void* data, std::int64_t index, T value) {
  std::memcpy(static_cast<std::byte*>(data) + static_cast<std::size_t>(index) * sizeof(T), &value, sizeof(T));
}

}  // namespace

void store_element(void* data, std::int64_t index, DType dtype, double value) {
  switch (dtype) {
    case DType::kF32: put(data, index, static_cast<float>(value)); break;
    case DType::kF64: put(data, index, value); break;
    case DType::kF16: put(data, index, float_to_half(static_cast<float>(value))); break;
    case DType::kBF16: put(data, index, float_to_bf16(static_cast<float>(value))); break;
    case DType::kI32: put(data, index, static_cast<std::int32_t>(static_cast<std::int64_t>(value))); break;
    case DType::kI64: put(data, index, static_cast<std::int64_t>(value)); break;
    case DType::kU8: put(data, index, static_cast<std::uint8_t>(static_cast<std::int64_t>(value))); break;
  }
}

}  // namespace braid
