// Scenario `compressed-fault KIND`: what a compressed allreduce does when something is wrong.
//   corrupt            BRAID_CHECKSUM on; rank 1 flips a byte of the int8 payload it sends to
//                      rank 0: rank 0 raises Corrupt naming rank 1 and the operation, and the
//                      others fail too (the communicator is poisoned) instead of waiting.
//   tampered-index     no checksum; rank 1 writes an out-of-range index into its topk payload:
//                      the structural checks alone catch it (Corrupt on every receiver).
//   mismatch           the last rank compresses with bf16, the others with fp16 (payloads of
//                      equal size): Mismatch, never a silently mixed result.
//   nonfinite-raise    rank 1's gradient holds a NaN under NonFinitePolicy::kRaise: every rank
//                      raises InvalidArgument naming rank 1, and the communicator stays usable.
//   nonfinite-propagate  the same NaN under kPropagate with int8: exactly the NaN's block
//                      decodes to NaN on every rank, everything else stays finite and correct.
// Lines: CORRUPT / MISMATCH / INVALID / OTHER-ERROR / NO-ERROR rank R, plus RECOVERED and
// NAN-BLOCK-OK for the non-finite kinds. SIGTERM is ignored for this scenario (main.cc).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_allreduce.h"
#include "braid/compress/payload_header.h"
#include "compressed_inputs.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using compress::CompressedAllreduceOptions;
using compress::parse_codec_spec;

constexpr std::size_t kCount = 4096;

void flip_byte_for_rank0(int peer, std::span<std::byte> payload) {
  if (peer == 0) payload[payload.size() - 3] ^= std::byte{0x40};
}

void index_out_of_range(int, std::span<std::byte> payload) {
  std::uint32_t bad = 0xfffffff0u;  // the first index of the body
  std::memcpy(payload.data() + compress::kPayloadHeaderBytes, &bad, sizeof(bad));
}

bool nan_exactly_in_first_block(Communicator& comm, std::span<const float> result) {
  auto exact = exact_allreduce(3, comm.size(), kCount, true);
  for (std::size_t i = 0; i < kCount; ++i) {
    bool in_block = i < compress::kDefaultBlock;
    if (in_block != std::isnan(result[i])) return false;
    if (!in_block && std::fabs(result[i] - exact[i]) > 0.1) return false;  // int8 twice: well within 0.1 of values <= 8
  }
  return true;
}

int run(Communicator& comm, const std::string& kind) {
  const int r = comm.rank();
  std::vector<float> data = compressed_input(3, r, kCount);
  compress::CompressionState state;
  CompressedAllreduceOptions options{.codec = parse_codec_spec("int8"), .error_feedback = false};
  if (kind == "corrupt") {
    options.checksum = true;
    if (r == 1) options.tamper = flip_byte_for_rank0;
  } else if (kind == "tampered-index") {
    options.codec = parse_codec_spec("topk:0.01");
    options.checksum = false;
    if (r == 1) options.tamper = index_out_of_range;
  } else if (kind == "mismatch") {
    options.codec = parse_codec_spec(r == comm.size() - 1 ? "bf16" : "fp16");
  } else if (kind == "nonfinite-raise" || kind == "nonfinite-propagate") {
    if (r == 1) data[5] = std::nanf("");
    if (kind == "nonfinite-raise") options.non_finite = compress::NonFinitePolicy::kRaise;
  } else {
    RANK_SAY("unknown kind '%s'", kind.c_str());
    return 2;
  }
  try {
    compress::compressed_allreduce(comm, data, state, options);
    if (kind == "nonfinite-propagate" && nan_exactly_in_first_block(comm, data)) RANK_SAY("NAN-BLOCK-OK rank %d", r);
    comm.barrier();
  } catch (const Corrupt& e) {
    RANK_SAY("CORRUPT rank %d: %s", r, e.what());
    return 3;
  } catch (const Mismatch& e) {
    RANK_SAY("MISMATCH rank %d: %s", r, e.what());
    return 3;
  } catch (const InvalidArgument& e) {
    RANK_SAY("INVALID rank %d: %s", r, e.what());
    float one = 1.0f;  // the communicator must still work
    allreduce(comm, &one, &one, 1, DType::kF32, ReduceOp::kSum);
    if (one == static_cast<float>(comm.size())) RANK_SAY("RECOVERED rank %d", r);
    return 0;
  } catch (const Error& e) {
    RANK_SAY("OTHER-ERROR rank %d: %s", r, e.what());
    return 4;
  }
  RANK_SAY("NO-ERROR rank %d", r);
  return 0;
}

}  // namespace

int scenario_compressed_fault(Communicator& comm, const Args& args) {
  return run(comm, args.empty() ? "corrupt" : args[0]);
}

}  // namespace braid::testing
