// Random-k compressed allreduce (Stich et al. 2018; Wangni et al. 2018): every rank derives
// the same k coordinates from a seed that is a function of (tensor name, step), so the k
// values line up across ranks and are summed by a dense allreduce of k elements — volume k
// per rank, where top-k's differing coordinates cost n*k.
//
// Without error feedback (the default: random-k is unbiased) the values are scaled by N/k, so
// that the expectation of the result over the draw equals the exact allreduce. With error
// feedback the values go unscaled and the unselected ones wait in the residual, as in
// error-feedback SGD (Stich et al.); scaling them as well would feed the residual a term of
// size (N/k - 1)*x every step.
#include <algorithm>

#include "braid/base/reduce_op.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_call.h"
#include "braid/compress/random_indices.h"

namespace braid::compress {

void allreduce_randomk(const CompressedCall& call) {
  const std::size_t count = call.data.size();
  const auto k = static_cast<std::size_t>(selected_count(call.codec.spec().ratio, static_cast<std::int64_t>(count)));
  std::span<float> input = call.data;
  if (call.error_feedback) {
    std::span<float> residual = call.state_buffer(kResidualRole, count);
    add_into(residual, call.data);
    input = residual;
  }
  call.check_finite(input);
  std::vector<std::uint32_t> indices(k);
  draw_random_indices(call.encode.seed, static_cast<std::int64_t>(count), static_cast<std::int64_t>(k), indices);
  const float scale = call.error_feedback || k == 0 ? 1.0f : randomk_scale(static_cast<std::int64_t>(count), static_cast<std::int64_t>(k));
  std::span<float> values = call.floats(0, k);
  for (std::size_t j = 0; j < k; ++j) values[j] = input[indices[j]] * scale;
  if (call.error_feedback) {
    for (std::uint32_t index : indices) input[index] = 0.0f;  // sent: leaves the residual
  }
  allreduce(call.comm, values.data(), values.data(), static_cast<std::int64_t>(k), DType::kF32,
            call.options.average ? ReduceOp::kAvg : ReduceOp::kSum);
  std::fill(call.data.begin(), call.data.end(), 0.0f);
  for (std::size_t j = 0; j < k; ++j) call.data[indices[j]] = values[j];
  call.stats.payload_bytes = k * sizeof(float);
  call.stats.wire_bytes = ring_allreduce_wire_bytes(k, call.size(), call.rank());
}

}  // namespace braid::compress
