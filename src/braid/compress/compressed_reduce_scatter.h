// Compressed reduce-scatter of an fp32 gradient: ZeRO++'s qgZ (Wang et al., "ZeRO++: Extremely
// Efficient Collective Communication for Giant Model Training", 2023), the gradient side of
// ZeRO stages 1 and 2 with 8-bit (or 16-bit, or sign) traffic.
//
// It is the first half of the two-stage compressed allreduce (compressed_allreduce.h), reused,
// not copied: every rank encodes each destination's shard of `data` (shard p = elements
// [p S, (p+1) S), S = shard.size()) and sends it to rank p (alltoallv of payloads); rank p
// decodes the n contributions to its shard, adds them in fp32 in rank order 0..n-1 (so the
// result does not depend on arrival order or algorithm) and divides once for the average. Each
// value is rounded once, by its sender's encoding, instead of once per ring hop.
//
// Error feedback: OFF unless options.error_feedback is true (unlike compressed_allreduce, where
// unset means on for biased codecs). DeepSpeed's qgZ has none, and its residual is a full-size
// fp32 copy of the gradient (4 bytes per parameter), which is what ZeRO shards away; int8 with
// blocks of 1024 rounds each gradient element by at most scale/2 = max|block| / 254, unbiased in
// expectation over elements, and docs/zero.md measures that training does not need it.
//
// Wire: this rank sends the other n-1 shards' payloads (header + codec body each: int8 is
// 56 + 4 ceil(S / block) + S bytes), about 1/4 of an fp32 reduce-scatter's (n-1) S x 4.
// stats.dense_wire_bytes is that fp32 reduce-scatter's figure, so wire_fraction() reads the cut.
#pragma once

#include <span>

#include "braid/comm/communicator.h"
#include "braid/comm/work.h"
#include "braid/compress/compressed_allreduce.h"
#include "braid/compress/compression_state.h"

namespace braid::compress {

// Reduces `data` (size() x shard.size() fp32 elements, read only) over every rank of `comm`;
// this rank's averaged (options.average) or summed shard lands in `shard`. REQUIRES (checked):
// every rank passes the same sizes, codec, name and average. Only the two-stage codecs (fp16,
// bf16, int8, sign) are accepted; InvalidArgument for another, for data.size() != size() x
// shard.size(), or for non-finite input under NonFinitePolicy::kRaise (on every rank). options'
// shape, step, momentum and host_striped are not used. Errors as compressed_allreduce's.
CompressionStats compressed_reduce_scatter(Communicator& comm, std::span<float> data, std::span<float> shard,
                                           CompressionState& state, const CompressedAllreduceOptions& options);

// The same on the communicator's background thread (async_collectives.h's contract: `data`,
// `shard` and `state` stay alive and untouched until wait(); the errors come from wait()).
// `stats`, if given, is written when the operation completes.
Work icompressed_reduce_scatter(Communicator& comm, std::span<float> data, std::span<float> shard,
                                CompressionState& state, CompressedAllreduceOptions options,
                                CompressionStats* stats = nullptr);

}  // namespace braid::compress
