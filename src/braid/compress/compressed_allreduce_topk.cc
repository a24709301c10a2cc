// Top-k compressed allreduce (Aji & Heafield 2017; Lin et al. 2018, "Deep Gradient
// Compression"): each rank keeps the k largest |values| of its error-compensated gradient,
// the (index, value) payloads are allgathered, and every rank adds all n of them into a zeroed
// tensor in rank order — the same additions in the same order everywhere, so the same bytes.
// The sum is sparse with at most n*k non-zeros; a dense allreduce of the selection would send
// n/k times more.
//
// Error feedback keeps the unselected values for the next step. With momentum correction
// (DGC), the residual accumulates momentum-corrected gradients instead: u = m*u + g, v = v + u,
// select from v, and both u and v are cleared where selected ("momentum factor masking"), so
// the momentum of a sent coordinate is not applied twice.
#include <algorithm>
#include <cstring>

#include "braid/base/reduce_op.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_call.h"
#include "braid/compress/payload_header.h"

namespace braid::compress {

namespace {

// DGC's momentum correction: u = m*u + g, then the residual v += u (v becomes the input).
void accumulate_momentum(std::span<float> momentum, std::span<float> residual, std::span<const float> gradient,
                         float m) {
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    momentum[i] = m * momentum[i] + gradient[i];
    residual[i] += momentum[i];
  }
}

// The selected indices of this rank's own topk payload (body: k u32 indices, then k values).
void clear_selected(std::span<float> buffer, std::span<const std::byte> payload) {
  std::uint64_t k = read_payload_header(payload).aux;
  const std::byte* indices = payload.data() + kPayloadHeaderBytes;
  for (std::uint64_t j = 0; j < k; ++j) {
    std::uint32_t index;
    std::memcpy(&index, indices + j * sizeof(index), sizeof(index));
    buffer[index] = 0.0f;
  }
}

}  // namespace

void allreduce_topk(const CompressedCall& call) {
  const int n = call.size();
  const std::size_t count = call.data.size();
  const std::size_t slot_bytes = call.codec.max_encoded_bytes(static_cast<std::int64_t>(count), {});
  std::span<std::byte> gathered = call.bytes(0, slot_bytes * static_cast<std::size_t>(n));
  std::span<std::byte> own = gathered.subspan(slot_bytes * static_cast<std::size_t>(call.rank()), slot_bytes);

  std::span<float> input = call.data;
  if (call.error_feedback) {
    std::span<float> residual = call.state_buffer(kResidualRole, count);
    if (call.options.momentum_correction) {
      accumulate_momentum(call.state_buffer(kMomentumRole, count), residual, call.data, call.options.momentum);
    } else {
      add_into(residual, call.data);
    }
    input = residual;  // v: what is selected from, and (after clearing the selection) next step's residual
  }
  call.check_finite(input);
  std::size_t written = call.codec.encode(input, {}, call.encode, own);
  std::fill(own.begin() + static_cast<std::ptrdiff_t>(written), own.end(), std::byte{0});
  if (call.error_feedback) {
    clear_selected(input, own.first(written));
    if (call.options.momentum_correction) clear_selected(call.state_buffer(kMomentumRole, count), own.first(written));
  }
  call.before_send(-1, own.first(written));
  call.stats.payload_bytes = written;

  allgather(call.comm, own.data(), gathered.data(), static_cast<std::int64_t>(slot_bytes), DType::kU8);
  std::fill(call.data.begin(), call.data.end(), 0.0f);
  for (int p = 0; p < n; ++p) {
    call.decode_from(p, gathered.subspan(slot_bytes * static_cast<std::size_t>(p), written), call.data,
                     DecodeMode::kAccumulate);
  }
  if (call.options.average) divide_by(call.data.data(), count, DType::kF32, n);
  call.stats.wire_bytes = static_cast<std::uint64_t>(n - 1) * slot_bytes;
}

}  // namespace braid::compress
