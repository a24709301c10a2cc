// AutocastScope (torch/mixed_precision.h): bf16 turns CPU autocast on for its lifetime only,
// computes a linear in bf16 from fp32 parameters whose gradients stay fp32, nests and restores;
// fp32 and fp16 leave the computation in fp32. parse_precision names bad values.
#include "braid/torch/mixed_precision.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

TEST(AutocastScopeTest, Bf16ComputesInBf16AndKeepsFp32Gradients) {
  ::torch::manual_seed(1);
  ::torch::nn::Linear linear(16, 8);
  ::torch::Tensor x = ::torch::randn({4, 16});
  ::torch::Tensor y;
  {
    AutocastScope bf16(Precision::kBf16);
    EXPECT_TRUE(at::autocast::is_cpu_enabled());
    y = linear->forward(x);
    EXPECT_EQ(y.scalar_type(), ::torch::kBFloat16);
    {
      AutocastScope nested(Precision::kBf16);
      EXPECT_EQ(linear->forward(x).scalar_type(), ::torch::kBFloat16);
    }
    EXPECT_TRUE(at::autocast::is_cpu_enabled());  // the nested scope restored, not disabled
  }
  EXPECT_FALSE(at::autocast::is_cpu_enabled());
  y.to(::torch::kFloat32).sum().backward();
  EXPECT_EQ(linear->weight.grad().scalar_type(), ::torch::kFloat32);
  // The bf16 result is the fp32 one within bf16's rounding (8 bits of mantissa: ~2^-8 relative
  // per input, a dot product of 16 terms stays well inside 5e-2 of |w||x|).
  ::torch::Tensor exact = linear->forward(x);
  EXPECT_TRUE(::torch::allclose(y.to(::torch::kFloat32), exact, 5e-2, 5e-2));
  EXPECT_EQ(exact.scalar_type(), ::torch::kFloat32);
}

TEST(AutocastScopeTest, Fp32AndFp16LeaveTheComputationInFp32) {
  ::torch::nn::Linear linear(4, 2);
  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    AutocastScope scope(p);
    EXPECT_FALSE(at::autocast::is_cpu_enabled());
    EXPECT_EQ(linear->forward(::torch::ones({1, 4})).scalar_type(), ::torch::kFloat32);
  }
}

TEST(PrecisionTest, NamesRoundTripAndBadOnesAreRefused) {
  for (const char* name : {"fp32", "bf16", "fp16"}) EXPECT_EQ(to_string(parse_precision(name)), name);
  try {
    parse_precision("fp8");
    ADD_FAILURE() << "fp8 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'fp8': expected fp32, bf16 or fp16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::torch
