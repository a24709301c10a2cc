// Writing a number into one element of a type-erased buffer, in the element type's own
// representation (16-bit floats rounded to nearest even). Used where values are computed in
// double and stored in any dtype: benchmark inputs, test references.
#pragma once

#include <cstdint>

#include "braid/base/dtype.h"

namespace braid {

// data[index] = value, converted to `dtype` (integers truncate; u8 and i32 take the low bits).
void store_element(void* data, std::int64_t index, DType dtype, double value);

}  // namespace braid
