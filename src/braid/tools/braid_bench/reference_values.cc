#include "reference_values.h"

#include <algorithm>
#include <cmath>


namespace braid::bench {

double input_value(ReduceOp op, int rank, std::int64_t index) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return static_cast<double>((rank + 1) * (index % 7 + 1));
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<double>((rank * 5 + index) % 11);
    case ReduceOp::kProd: return (rank + index) % 3 == 0 ? 2.0 : 1.0;
  }
  return 0;
}

double expected_value(ReduceOp op, int ranks, std::int64_t index, DType dtype) {
  double result = input_value(op, 0, index);
  for (int r = 1; r < ranks; ++r) {
    double v = input_value(op, r, index);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: result += v; break;
      case ReduceOp::kMin: result = std::min(result, v); break;
      case ReduceOp::kMax: result = std::max(result, v); break;
      case ReduceOp::kProd: result *= v; break;
    }
  }
  if (dtype == DType::kU8) result = std::fmod(result, 256.0);  // u8 arithmetic wraps
  if (op == ReduceOp::kAvg) {
    bool integral = dtype == DType::kI32 || dtype == DType::kI64 || dtype == DType::kU8;
    if (integral) {
      result = std::trunc(result / ranks);
    } else if (dtype == DType::kF64) {
      result /= ranks;
    } else {  // the kernels divide in fp32; dividing in double and narrowing could round twice
      result = static_cast<double>(static_cast<float>(result) / static_cast<float>(ranks));
    }
  }
  return result;
}


}  // namespace braid::bench
