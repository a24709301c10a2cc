#include "collective_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "braid/base/element_value.h"

namespace braid::testing {

namespace {

// Distinct per rank and index, in [1, 50]: exact in every dtype.
double contribution(int rank, std::int64_t index) { return static_cast<double>((rank * 7 + index) % 50 + 1); }

double reduce_input(ReduceOp op, int rank, std::int64_t index) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return static_cast<double>((rank + 1) * (index % 7 + 1));
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<double>((rank * 5 + index) % 11);
    case ReduceOp::kProd: return (rank + index) % 3 == 0 ? 2.0 : 1.0;
  }
  return 0;
}

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return a + b;
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
    case ReduceOp::kProd: return a * b;
  }
  return 0;
}

double reduce_expected(ReduceOp op, int n, std::int64_t index, DType dtype) {
  double result = reduce_input(op, 0, index);
  for (int r = 1; r < n; ++r) result = combine(op, result, reduce_input(op, r, index));
  if (dtype == DType::kU8) result = std::fmod(result, 256.0);
  if (op != ReduceOp::kAvg) return result;
  if (dtype == DType::kI32 || dtype == DType::kI64 || dtype == DType::kU8) return std::trunc(result / n);
  if (dtype == DType::kF64) return result / n;
  return static_cast<double>(static_cast<float>(result) / static_cast<float>(n));  // kernels divide in fp32
}


template <typename Value>
void fill(std::vector<std::byte>& out, std::int64_t count, DType dtype, Value value) {
  out.resize(static_cast<std::size_t>(count) * dtype_size(dtype));
  for (std::int64_t i = 0; i < count; ++i) store_element(out.data(), i, dtype, value(i));
}

}  // namespace

void fill_gathered(std::vector<std::byte>& out, int n, std::int64_t count, DType dtype) {
  fill(out, count * n, dtype, [&](std::int64_t i) { return contribution(static_cast<int>(i / count), i % count); });
}

void fill_broadcast(std::vector<std::byte>& out, int root, std::int64_t count, DType dtype) {
  fill(out, count, dtype, [&](std::int64_t i) { return contribution(root, i); });
}

void fill_reduce_inputs(std::vector<std::byte>& out, ReduceOp op, int rank, std::int64_t count, DType dtype,
                        std::int64_t first) {
  fill(out, count, dtype, [&](std::int64_t i) { return reduce_input(op, rank, first + i); });
}

void fill_reduce_expected(std::vector<std::byte>& out, ReduceOp op, int n, std::int64_t first, std::int64_t count,
                          DType dtype) {
  fill(out, count, dtype, [&](std::int64_t i) { return reduce_expected(op, n, first + i, dtype); });
}

}  // namespace braid::testing
