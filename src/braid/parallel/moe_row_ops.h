// The local row arithmetic of MoE dispatch and combine, on rows of `hidden` elements: gathering
// rows by index into a staging buffer, block moves between row orders, and the gate-weighted
// sum that turns a token's returned copies into its output. Internal to parallel/ (used by
// moe_dispatcher.cc), pure, one loop order everywhere so results do not depend on the chunking.
#pragma once

#include <cstdint>
#include <span>

#include "braid/base/dtype.h"
#include "braid/parallel/moe_exchange_layout.h"

namespace braid::parallel::moe_rows {

// dst row i = src row index[i], rows of row_bytes bytes.
void gather(const void* src, std::span<const std::int64_t> index, std::int64_t row_bytes, void* dst);
// Block copies between two row orders: forward copies block.from -> block.to, backward the reverse.
void move_blocks(const void* src, std::span<const MoeRowBlock> blocks, std::int64_t row_bytes, void* dst, bool backward);

// out[t] = sum over j = 0..k-1 with row_of_choice[t k + j] >= 0 of
//          w(t, j) x rows[row_of_choice[t k + j]]    (w = gates[t k + j], or 1 when gates is null)
// accumulated in the dtype (f32 or f64), left to right from +0; tokens without a kept choice get
// zeros. REQUIRES: dtype is kF32 or kF64.
void weighted_sum(DType dtype, const void* rows, std::span<const std::int64_t> row_of_choice, const float* gates,
                  std::int64_t tokens, int top_k, std::int64_t hidden, void* out);

// Per choice t k + j: out row = rows[row_of_choice[...]] (zeros for a dropped choice).
void scatter_choices(const void* rows, std::span<const std::int64_t> row_of_choice, std::int64_t row_bytes, void* out);

}  // namespace braid::parallel::moe_rows
