#include "braid/base/reduce_op.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/half.h"

namespace braid {
namespace {

TEST(ReduceOpTest, EveryOpOnFloats) {
  std::vector<float> a{1, -2, 3, 4}, b{5, 6, -7, 0.5f};
  auto run = [&](ReduceOp op) {
    std::vector<float> d = a;
    reduce_into(d.data(), b.data(), d.size(), DType::kF32, op);
    return d;
  };
  EXPECT_EQ(run(ReduceOp::kSum), (std::vector<float>{6, 4, -4, 4.5f}));
  EXPECT_EQ(run(ReduceOp::kMin), (std::vector<float>{1, -2, -7, 0.5f}));
  EXPECT_EQ(run(ReduceOp::kMax), (std::vector<float>{5, 6, 3, 4}));
  EXPECT_EQ(run(ReduceOp::kProd), (std::vector<float>{5, -12, -21, 2}));
}

TEST(ReduceOpTest, IntegersWrapAndDivideByTruncation) {
  std::vector<std::uint8_t> a{250, 7}, b{10, 2};
  reduce_into(a.data(), b.data(), 2, DType::kU8, ReduceOp::kSum);
  EXPECT_EQ(a, (std::vector<std::uint8_t>{4, 9}));
  std::vector<std::int64_t> c{7, -7};
  divide_by(c.data(), 2, DType::kI64, 2);
  EXPECT_EQ(c, (std::vector<std::int64_t>{3, -3}));
}

TEST(ReduceOpTest, HalfTypesAccumulateInFloat) {
  // 2048 + 1 is not representable in fp16 (spacing 2 there): the sum rounds to even.
  std::vector<std::uint16_t> a{float_to_half(2048.0f)}, b{float_to_half(1.0f)};
  reduce_into(a.data(), b.data(), 1, DType::kF16, ReduceOp::kSum);
  EXPECT_EQ(half_to_float(a[0]), 2048.0f);
  std::vector<std::uint16_t> c{float_to_bf16(1.5f)}, d{float_to_bf16(2.0f)};
  reduce_into(c.data(), d.data(), 1, DType::kBF16, ReduceOp::kProd);
  EXPECT_EQ(bf16_to_float(c[0]), 3.0f);
  divide_by(c.data(), 1, DType::kBF16, 2);
  EXPECT_EQ(bf16_to_float(c[0]), 1.5f);
}

TEST(ReduceOpTest, NamesRoundTrip) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
    EXPECT_EQ(parse_reduce_op(reduce_op_name(op)), op);
  }
  EXPECT_FALSE(parse_reduce_op("mean").has_value());
  for (int raw = 0; raw < kNumDTypes; ++raw) {
    auto dtype = static_cast<DType>(raw);
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
}

}  // namespace
}  // namespace braid
