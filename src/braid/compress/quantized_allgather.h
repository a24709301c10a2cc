// Quantised allgather of fp32 shards: ZeRO++'s qwZ (Wang et al. 2023), the parameter side of
// ZeRO with 8-bit traffic; stage 3 gathers its modules' parameters through the same call.
//
//   // every rank: its `count` floats in, the n x count gathered floats out
//   braid::compress::quantized_allgather(comm, master_shard, count, flat_params, {.name = "bucket 0"});
//   braid::Work w = braid::compress::iquantized_allgather(comm, shard, count, full, {.name = "layer3"});
//
// Each rank encodes its shard with the int8 codec (blockwise symmetric, one fp32 scale per block
// of `block` elements from the shard's first element; codec_int8.cc), the payloads are
// allgathered as bytes (one collective: payload = header, scales and int8 values back to back,
// so one message per peer and one latency rather than two), and every rank, the owner too,
// decodes all n payloads into `full`. So every rank holds bitwise-identical values, within the
// int8 bound of its owner's exact ones: |x - x'| <= scale / 2 + 4 x 2^-24 x max|block|, scale =
// max|block| / 127. The caller keeps the exact shard (ZeRO's fp32 master) if it needs it:
// `full`'s slice of this rank is overwritten by the dequantised values.
//
// Exact cases: zeros (padding, an all-zero block, a shard of nothing but padding) decode to +0;
// a block whose max|x| is below 2^-119 decodes to 0 too (codec_int8.cc says why).
// Non-finite values: a block holding NaN or Inf decodes to NaN in every element on every rank
// (the int8 codec's contract; bf16 and fp16 carry each value, fp16 turning finite values
// beyond 65504 into Inf). Under NonFinitePolicy::kRaise (the default) every rank then throws the
// same InvalidArgument naming the first rank whose shard held one and `name` (no extra
// communication: the gathered bytes are identical everywhere, so is the verdict); the
// collective itself completed, so the communicator stays usable. kPropagate returns the NaN
// blocks instead.
//
// Wire: this rank sends its payload to the n-1 others (a ring allgather's volume):
// (n-1) x quantized_allgather_payload_bytes(count, block), against (n-1) x count x 4 for fp32:
// a 3.98x cut at blocks of 1024 for large shards (the 56-byte header is per shard and rank).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/comm/work.h"
#include "braid/compress/codec.h"
#include "braid/compress/compressed_allreduce.h"

namespace braid::compress {

struct QuantizedAllgatherOptions {
  // kInt8 (qwZ), or kBf16 / kFp16: the 16-bit weights of mixed-precision training (half the
  // bytes, the master kept exact by the caller as for int8). Another codec: InvalidArgument.
  CodecId codec = CodecId::kInt8;
  // int8 elements per fp32 scale (0: kDefaultBlock = 1024, codec_spec.h; the compressed
  // allreduce's block, see docs/zero.md "ZeRO++" for the comparison with DeepSpeed's groups).
  std::uint32_t block = 0;
  std::string name = "tensor";  // named in errors
  NonFinitePolicy non_finite = NonFinitePolicy::kRaise;
  std::optional<bool> checksum;  // unset: BRAID_CHECKSUM
};

// The payload one rank's shard of `count` floats travels as (header included; 0 for count 0,
// which sends nothing): 56 + 4 x ceil(count / block) + count bytes for int8, the 16-bit codecs'
// header + 2 x count for bf16 and fp16.
std::size_t quantized_allgather_payload_bytes(std::int64_t count, std::uint32_t block = 0,
                                              CodecId codec = CodecId::kInt8);

// Gathers every rank's `count` floats at `shard` into `full` (n x count floats, rank p's at
// p x count), through int8. `shard` may be `full + rank x count` (in place). Every rank passes
// the same count, block and name. InvalidArgument for count < 0, null buffers, a block outside
// [1, kMaxBlock], or (kRaise) a non-finite value on some rank; Mismatch / Corrupt when the
// ranks disagree or a payload fails its checks (the communicator is poisoned, as for the
// compressed allreduce). stats.elements counts this rank's floats, payload_bytes its payload.
CompressionStats quantized_allgather(Communicator& comm, const float* shard, std::int64_t count, float* full,
                                     const QuantizedAllgatherOptions& options = {});
// The same on the communicator's background thread (async_collectives.h's contract: the
// buffers stay untouched until wait(); the errors come from wait()). `stats`, if given, is
// written when the operation completes.
Work iquantized_allgather(Communicator& comm, const float* shard, std::int64_t count, float* full,
                          QuantizedAllgatherOptions options = {}, CompressionStats* stats = nullptr);

}  // namespace braid::compress
