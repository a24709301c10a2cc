#include "braid/tools/braid_train/blas_core_choice.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <array>
#include <utility>

namespace braid::train {
namespace {

// OpenBLAS's x86 core names by the widest vector instructions their kernels use: 1 SSE, 2 AVX,
// 3 AVX2, 4 AVX-512. 0: not in the table.
int vector_level(std::string_view core) {
  static constexpr std::array<std::pair<std::string_view, int>, 26> kLevels{{
      {"Katmai", 1},      {"Coppermine", 1}, {"Northwood", 1},   {"Prescott", 1},    {"Banias", 1},
      {"Core2", 1},       {"Penryn", 1},     {"Dunnington", 1},  {"Nehalem", 1},     {"Atom", 1},
      {"Athlon", 1},      {"Opteron", 1},    {"Opteron_SSE3", 1}, {"Barcelona", 1},  {"Nano", 1},
      {"Bobcat", 1},      {"Sandybridge", 2}, {"Bulldozer", 2},  {"Piledriver", 2},  {"Steamroller", 2},
      {"Haswell", 3},     {"Zen", 3},        {"Excavator", 3},   {"SkylakeX", 4},    {"Cooperlake", 4},
      {"SapphireRapids", 4},
  }};
  for (const auto& [name, level] : kLevels) {
    if (name == core) return level;
  }
  return 0;
}

#if defined(__x86_64__) || defined(__i386__)
bool vendor_is_amd() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ebx == 0x68747541;  // "Auth" of "AuthenticAMD"
}
#endif

}  // namespace

CpuFeatures cpu_features() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // idempotent; needed if called before libgcc's own constructor ran
  return {.x86 = true,
          .amd = vendor_is_amd(),
          .avx = __builtin_cpu_supports("avx") != 0,
          .avx2 = __builtin_cpu_supports("avx2") != 0,
          .fma = __builtin_cpu_supports("fma") != 0,
          .avx512f = __builtin_cpu_supports("avx512f") != 0,
          .avx512bw = __builtin_cpu_supports("avx512bw") != 0,
          .avx512vl = __builtin_cpu_supports("avx512vl") != 0,
          .avx512dq = __builtin_cpu_supports("avx512dq") != 0,
          .avx512cd = __builtin_cpu_supports("avx512cd") != 0};
#else
  return {};
#endif
}

std::string best_blas_core(const CpuFeatures& c) {
  if (!c.x86) return "";
  if (c.avx512f && c.avx512bw && c.avx512vl && c.avx512dq && c.avx512cd) return "SkylakeX";
  if (c.avx2 && c.fma) return c.amd ? "Zen" : "Haswell";
  if (c.avx) return "Sandybridge";
  return "";
}

std::string better_blas_core(std::string_view running, std::string_view best) {
  int have = vector_level(running), could = vector_level(best);
  if (have == 0 || could <= have) return "";
  return std::string(best);
}

}  // namespace braid::train
