// Gradient compression as the planner sees it: the bytes per gradient element each of braid's
// codecs puts on the wire (docs/compression.md), and the resulting data-parallel volume.
//
//   none        grad_bytes           dense allreduce
//   fp16, bf16  2                    dense allreduce
//   int8[:B]    1 + 4/B              two-stage: all-to-all + allgather, same volume as RS + AG
//   sign[:B]    1/8 + 4/B            two-stage, as int8
//   randomk:R   4 R                  dense allreduce of the shared-seed k values
//   topk:R      8 R (index + value)  sparse allgather: each rank sends its k entries to n-1
//                                    ranks, (n-1) x 8 R Phi, which grows with n (unlike the rest)
//   powersgd:r  8 r / h              two allreduces of rank-r factors of h x h matrices
#pragma once

#include <string>
#include <string_view>

#include "braid/plan/estimate.h"

namespace braid::plan {

struct CompressionSpec {
  std::string codec = "none";  // none, fp16, bf16, int8, sign, topk, randomk, powersgd
  double parameter = 0;        // block size (int8, sign), ratio R (topk, randomk), rank (powersgd)
};

// "int8", "int8:256", "topk:0.01", "powersgd:4"; throws InvalidArgument naming `field`.
CompressionSpec parse_compression(std::string_view text, std::string_view field = "compression");
std::string compression_name(const CompressionSpec& spec);

// Per-rank bytes per iteration of a data-parallel gradient sync over `dp` ranks of `params`
// gradients of `grad_bytes` each, compressed with `spec`; `hidden` sizes PowerSGD's matrices.
Estimate compressed_dp_bytes(const CompressionSpec& spec, double params, double grad_bytes, int dp, double hidden);

}  // namespace braid::plan
