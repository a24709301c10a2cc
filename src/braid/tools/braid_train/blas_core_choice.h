// Which OpenBLAS kernel set ("core") this CPU deserves. OpenBLAS's DYNAMIC_ARCH builds choose
// a core at load from a table of CPU models; a model newer than the build falls back to a weak
// one: Debian's 0.3.21 runs Intel family 6 model 207 (Emerald Rapids: AVX-512, AMX) on its
// Prescott (SSE3) kernels, 4.5x slower on braid-train's MLP than SkylakeX. The CPU's feature
// flags (CPUID) say what it can run whatever its model number. Pure, apart from
// cpu_features(); torch-free.
#pragma once

#include <string>
#include <string_view>

namespace braid::train {

struct CpuFeatures {
  bool x86 = false;
  bool amd = false;
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512cd = false;
};

// This CPU's, with the OS's consent to the wide registers (__builtin_cpu_supports checks XGETBV).
CpuFeatures cpu_features();

// The best core OpenBLAS offers for these features: SkylakeX (AVX-512 F, BW, VL, DQ and CD,
// Intel or AMD: OpenBLAS itself runs Zen 4 on it), Haswell (AVX2 + FMA; Zen on AMD), Sandybridge
// (AVX); "" below that or off x86, where OpenBLAS's own choice stands.
std::string best_blas_core(const CpuFeatures& cpu);

// The core to restart with instead of `running` (OpenBLAS's choice), or "" to keep it: only
// when `best` is a wider instruction set. An unknown name (another architecture, or a core
// newer than this table) is never replaced.
std::string better_blas_core(std::string_view running, std::string_view best);

}  // namespace braid::train
