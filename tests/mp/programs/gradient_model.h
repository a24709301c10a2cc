// A model made of flat fp32 gradient buffers registered with a GradSync ("layer<p>.weight", in
// order), and the value pattern the scenarios fill them with: small multiples of 1/4, so every
// partial sum is exact in fp32 and any reduction order gives the same bits.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "braid/engine/grad_sync.h"

namespace braid::testing {

// Rank `rank`'s gradient element i of parameter p at `step`; `param_stride` shifts the pattern
// from one parameter to the next.
inline float gradient_pattern(int rank, int step, std::size_t p, std::size_t i, std::size_t param_stride) {
  return static_cast<float>((rank + 1) * static_cast<int>((i + param_stride * p + static_cast<std::size_t>(step)) % 13)) *
         0.25f;
}

struct GradientModel {
  std::vector<std::vector<float>> grads;

  GradientModel(GradSync& sync, const std::vector<std::int64_t>& counts) : grads(counts.size()) {
    for (std::size_t p = 0; p < counts.size(); ++p) {
      grads[p].resize(static_cast<std::size_t>(counts[p]));
      sync.add_param(fmt::format("layer{}.weight", p), grads[p].data(), counts[p], DType::kF32);
    }
  }

  // Sets (or, with `add`, accumulates) every gradient to the pattern of `rank` at `step`.
  void fill(int rank, int step, std::size_t param_stride, bool add = false) {
    for (std::size_t p = 0; p < grads.size(); ++p) {
      for (std::size_t i = 0; i < grads[p].size(); ++i) {
        float v = gradient_pattern(rank, step, p, i, param_stride);
        grads[p][i] = add ? grads[p][i] + v : v;
      }
    }
  }
};

}  // namespace braid::testing
