// Number formats a model is stored or moved in, their size per element, and the compression
// ratios between them (seeds/004, "量化压缩比": FP8/BF16 = 1/2, INT4/BF16 = 1/4).
#pragma once

#include <string>
#include <string_view>

#include "braid/plan/estimate.h"

namespace braid::plan {

// Bytes per element: fp32 4, tf32 4, fp16 2, bf16 2, fp8 1, int8 1, int4 0.5.
// Throws InvalidArgument naming `field` and the accepted names for anything else.
double precision_bytes(std::string_view name, std::string_view field = "precision");

// to / from, per element. With group_size > 0 every group of `group_size` elements of `to`
// also stores one scale of `scale_bytes` (group-wise quantisation, e.g. INT4 with one BF16
// scale per 128 weights: 0.5 + 2/128 bytes per weight). The seed's "about 1-2% extra" is
// 2/128 = 1.6% of a byte; relative to the INT4 payload itself it is 3.1% (docs/planner.md).
Estimate quantisation_ratio(std::string_view from, std::string_view to, double group_size = 0,
                            double scale_bytes = 2);

}  // namespace braid::plan
