// The uncompressed scheme (codec none): braid's fp32 allreduce as it is. Small tensors and
// warm-up steps take it (compression_policy.h), and it is the baseline every codec's figures
// are compared against.
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_call.h"

namespace braid::compress {

void allreduce_dense(const CompressedCall& call) {
  call.check_finite(call.data);
  allreduce(call.comm, call.data.data(), call.data.data(), static_cast<std::int64_t>(call.data.size()), DType::kF32,
            call.options.average ? ReduceOp::kAvg : ReduceOp::kSum);
  call.stats.payload_bytes = call.data.size_bytes();
  call.stats.wire_bytes = ring_allreduce_wire_bytes(call.data.size(), call.size(), call.rank());
}

}  // namespace braid::compress
