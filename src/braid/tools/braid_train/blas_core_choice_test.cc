#include "braid/tools/braid_train/blas_core_choice.h"

#include <gtest/gtest.h>

namespace braid::train {
namespace {

CpuFeatures avx512(bool amd) {
  return {.x86 = true, .amd = amd, .avx = true, .avx2 = true, .fma = true, .avx512f = true, .avx512bw = true,
          .avx512vl = true, .avx512dq = true, .avx512cd = true};
}

TEST(BlasCoreChoice, TheWidestCoreTheFeaturesAllow) {
  EXPECT_EQ(best_blas_core(avx512(false)), "SkylakeX");  // Sapphire / Emerald Rapids, Ice Lake, Skylake-SP
  EXPECT_EQ(best_blas_core(avx512(true)), "SkylakeX");   // Zen 4
  CpuFeatures avx2{.x86 = true, .avx = true, .avx2 = true, .fma = true};
  EXPECT_EQ(best_blas_core(avx2), "Haswell");
  avx2.amd = true;
  EXPECT_EQ(best_blas_core(avx2), "Zen");  // EPYC Rome / Milan
  CpuFeatures partial = avx512(false);
  partial.avx512dq = false;  // Knights Landing: AVX-512 without DQ/BW/VL
  EXPECT_EQ(best_blas_core(partial), "Haswell");
  EXPECT_EQ(best_blas_core({.x86 = true, .avx = true}), "Sandybridge");
  EXPECT_EQ(best_blas_core({.x86 = true}), "");
  EXPECT_EQ(best_blas_core({}), "");  // not x86: OpenBLAS's choice stands
}

TEST(BlasCoreChoice, ReplacesOnlyANarrowerKnownCore) {
  EXPECT_EQ(better_blas_core("Prescott", "SkylakeX"), "SkylakeX");  // the issue: model 207 on 0.3.21
  EXPECT_EQ(better_blas_core("Haswell", "SkylakeX"), "SkylakeX");
  EXPECT_EQ(better_blas_core("Sandybridge", "Zen"), "Zen");
  EXPECT_EQ(better_blas_core("SkylakeX", "SkylakeX"), "");
  EXPECT_EQ(better_blas_core("Cooperlake", "SkylakeX"), "");  // as wide, and with bf16: keep it
  EXPECT_EQ(better_blas_core("Zen", "Haswell"), "");
  EXPECT_EQ(better_blas_core("SkylakeX", "Haswell"), "");
  EXPECT_EQ(better_blas_core("NEOVERSEN1", "SkylakeX"), "");  // unknown: never replaced
  EXPECT_EQ(better_blas_core("Prescott", ""), "");
}

}  // namespace
}  // namespace braid::train
