// PowerSGD compressed allreduce (Vogels, Karimireddy & Jaggi, NeurIPS 2019), one power
// iteration per step with Q warm-started from the previous step:
//   M = gradient + residual                    (error feedback, on by default)
//   P = M Q;        allreduce(P, sum)          rows x r values on the wire
//   P = orthonormal(P)                         identical on every rank: same P, same code
//   Q = M^T P;      allreduce(Q, avg or sum)   cols x r values on the wire
//   result = P Q^T; residual = M - result
// Q's first value comes from a seed every rank derives from the tensor's name, so all ranks
// start from the same Q; it then lives in CompressionState (part of a checkpoint).
// A tensor without a 2-D shape goes through the dense allreduce, as PowerSGD leaves biases and
// norms uncompressed. The result has rank <= r, so it is exact when the average is.
#include <algorithm>

#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_call.h"
#include "braid/compress/powersgd_math.h"

namespace braid::compress {

void allreduce_powersgd(const CompressedCall& call) {
  const Shape shape = call.options.shape;
  if (!shape.is_matrix()) return allreduce_dense(call);
  const std::int64_t r = call.codec.spec().rank;
  if (r > std::min(shape.rows, shape.cols)) {
    throw InvalidArgument(call.context(-1), fmt::format("rank {} larger than the {}x{} matrix (at most {})", r,
                                                        shape.rows, shape.cols, std::min(shape.rows, shape.cols)));
  }
  const auto count = call.data.size();
  // With error feedback M = gradient + residual lives in the residual buffer, and the new
  // residual M - P Q^T is written back into it at the end.
  std::span<float> m = call.error_feedback ? call.state_buffer(kResidualRole, count) : call.data;
  std::span<float> q = call.state.buffer(call.options.name, kPowerSgdQRole, static_cast<std::size_t>(shape.cols * r),
                                         [&](std::span<float> fresh) { fill_standard_normal(call.encode.seed, fresh); });
  std::span<float> p = call.floats(0, static_cast<std::size_t>(shape.rows * r));
  ConstMatrixView mv(m.data(), shape.rows, shape.cols);
  MatrixView pv{p.data(), shape.rows, r}, qv{q.data(), shape.cols, r};

  // The passes over M are what costs (the factors are small): the addition of the residual
  // rides with P = M Q, the residual's update with P Q^T, each a block of rows while it is in
  // cache. Same bits as the separate passes. The finite check (a collective, only under
  // NonFinitePolicy::kRaise) must come between the addition and the product, so it keeps them apart.
  if (!call.error_feedback) {
    call.check_finite(m);
    multiply(mv, qv, pv);
  } else if (call.options.non_finite == NonFinitePolicy::kRaise) {
    add_into(m, call.data);
    call.check_finite(m);
    multiply(mv, qv, pv);
  } else {
    add_and_multiply(MatrixView{m.data(), shape.rows, shape.cols}, call.data.data(), qv, pv);
  }
  allreduce(call.comm, p.data(), p.data(), static_cast<std::int64_t>(p.size()), DType::kF32, ReduceOp::kSum);
  orthonormalize_columns(pv);
  multiply_transposed(mv, pv, qv);
  allreduce(call.comm, q.data(), q.data(), static_cast<std::int64_t>(q.size()), DType::kF32,
            call.options.average ? ReduceOp::kAvg : ReduceOp::kSum);
  // residual = M - P Q^T from the product just written: the same bits as a second
  // apply_low_rank(kSubtract), for one subtraction per element instead of r multiply-adds.
  const MatrixView out{call.data.data(), shape.rows, shape.cols};
  if (call.error_feedback) {
    apply_low_rank_and_subtract(pv, qv, out, MatrixView{m.data(), shape.rows, shape.cols});
  } else {
    apply_low_rank(pv, qv, out, Combine::kOverwrite);
  }

  const std::uint64_t factor_bytes = (p.size() + q.size()) * sizeof(float);
  call.stats.payload_bytes = factor_bytes;
  call.stats.wire_bytes = ring_allreduce_wire_bytes(p.size(), call.size(), call.rank()) +
                          ring_allreduce_wire_bytes(q.size(), call.size(), call.rank());
}

}  // namespace braid::compress
