// The PASS/FAIL lines of the torch scenario programs (tensor-parallel and MoE layers against
// their single-process references): each check prints one line the test reads, and the
// program exits non-zero if any failed.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace braid::testing {

// The number of failed checks so far in this process.
inline int& failed_checks() {
  static int failures = 0;
  return failures;
}

inline void check(bool ok, const std::string& what, const std::string& detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(), detail.empty() ? "" : " ", detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failed_checks();
}

// got against ref with rtol 1e-4 and atol 1e-5 x max|ref| (each caller says why that fits its
// arithmetic), printing the largest difference either way.
inline bool close(const ::torch::Tensor& got, const ::torch::Tensor& ref, const std::string& what) {
  if (!got.defined() || got.sizes() != ref.sizes()) {
    check(false, what, "shape " + std::to_string(got.defined() ? got.numel() : 0) + " vs " + std::to_string(ref.numel()));
    return false;
  }
  double scale = ref.abs().max().item<double>();
  double diff = (got - ref).abs().max().item<double>();
  bool ok = ::torch::allclose(got, ref, 1e-4, 1e-5 * std::max(scale, 1e-30));
  char detail[128];
  std::snprintf(detail, sizeof detail, "max_abs_diff=%.3g max_abs_ref=%.3g", diff, scale);
  check(ok, what, detail);
  return ok;
}

}  // namespace braid::testing
