// Compressed allreduce of an fp32 gradient (DESIGN.md, "Compression: the algorithms to use").
// Each codec travels the scheme that suits it:
//   none            braid::allreduce in fp32.
//   fp16, bf16,     two stages (1-bit Adam / ZeRO++ qgZ): the tensor is cut into one shard per
//   int8, sign      rank; every rank encodes every shard and sends it to its owner (alltoallv);
//                   the owner decodes the n versions of its shard and sums them in fp32, in rank
//                   order, divides once (average), re-encodes the sum (with a second, shard-side
//                   residual) and the encoded shards are allgathered and decoded by everyone.
//                   One rounding per stage instead of one per ring hop. Across several hosts
//                   with the same number (>= 2) of ranks each (host_striped; by default for
//                   fp16, bf16, int8):
//                   fp32 reduce_scatter inside each host, the two stages between hosts over
//                   stripes of one rank per host, fp32 allgather inside each host: only what
//                   crosses hosts is compressed (compressed_allreduce_host_striped.cc).
//   topk            each rank sends its k (index, value) pairs to all (allgather); the sum is
//                   accumulated densely in rank order.
//   randomk         the k coordinates come from a seed every rank derives from (name, step), so
//                   the k values are allreduced densely: volume k, not n * k.
//   powersgd        P = M Q is allreduced, orthonormalised, Q = M^T P is allreduced, the result
//                   is P Q^T (Vogels et al. 2019), Q warm-started from the previous step. A tensor
//                   without a 2-D shape goes uncompressed.
// Every rank decodes the same bytes (its own contribution included), so every rank ends with
// bitwise-identical results.
//
// Error feedback (on by default for biased codecs: int8, sign, topk, powersgd): what this
// rank's compression dropped is kept in `state` and added to the next call's input for the
// same tensor name. Checksums (options.checksum, default BRAID_CHECKSUM) cover every payload
// of the payload-carrying schemes (fp16, bf16, int8, sign, topk); randomk and powersgd reduce
// values inside braid::allreduce, where no per-sender payload exists to check.
//
// Failures: a payload that fails its checks raises braid::Corrupt naming the sender and the
// operation, and poisons the communicator (peers then fail too, rather than wait); ranks that
// disagree on codec, element count, step or shape raise braid::Mismatch or Corrupt, never a
// hang. Only fp32 data is accepted.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "braid/comm/communicator.h"
#include "braid/compress/codec.h"
#include "braid/compress/codec_spec.h"
#include "braid/compress/compression_state.h"

namespace braid::compress {

struct CompressedAllreduceOptions {
  CodecSpec codec;
  std::string name = "tensor";  // keys the tensor's state in CompressionState; named in errors
  Shape shape;                  // powersgd: the tensor's 2-D view
  std::int64_t step = 0;        // training step: seeds randomk's coordinates (equal on every rank)
  bool average = true;          // divide the sum by the world size (once, at the end)
  std::optional<bool> error_feedback;  // unset: on for biased codecs
  bool momentum_correction = false;    // topk: DGC momentum correction (Lin et al. 2018)
  float momentum = 0.9f;
  NonFinitePolicy non_finite = NonFinitePolicy::kPropagate;
  std::optional<bool> checksum;  // unset: BRAID_CHECKSUM
  // fp16/bf16/int8/sign across hosts: compress between hosts only (unset:
  // BRAID_COMPRESS_HOST_STRIPED: auto = fp16, bf16 and int8, not sign). Equal on every rank.
  std::optional<bool> host_striped;
  // Fault injection for tests: called on every payload this rank is about to send (peer is
  // the destination's rank, -1 for a payload sent to all), after its checksum was written.
  std::function<void(int peer, std::span<std::byte> payload)> tamper;
};

// What one call moved. The wire figures count this rank's sends under the bandwidth-optimal
// schedules braid uses over networks (pairwise alltoall, ring allgather, ring allreduce);
// transport_bytes is what really crossed a transport from this process during the call
// (detail::CollectiveAccess::bytes_sent), which equals wire_bytes when those algorithms run over tcp and is
// lower when shared-memory direct algorithms moved the data without messages.
struct CompressionStats {
  CodecSpec codec;                      // the codec used
  std::uint64_t elements = 0;           // fp32 elements this rank encoded (host-striped: its shard)
  std::uint64_t payload_bytes = 0;      // their compressed size, headers included
  std::uint64_t wire_bytes = 0;         // bytes this rank sent
  std::uint64_t dense_wire_bytes = 0;   // what an fp32 ring allreduce sends per rank: 2(n-1)/n * 4N
  std::uint64_t transport_bytes = 0;    // measured on the transports

  // Uncompressed fp32 bytes over compressed payload bytes (>= 1 means smaller).
  double compression_ratio() const;
  // wire_bytes / dense_wire_bytes: the fraction of the fp32 ring's traffic this call sent.
  double wire_fraction() const;
  CompressionStats& operator+=(const CompressionStats& other);
};

// Reduces `data` (fp32, in place) over every rank of `comm` through options.codec.
// REQUIRES (checked): every rank passes the same data.size(), codec, name, shape, step and
// average. Throws InvalidArgument for a bad codec spec, a shape that does not hold
// data.size() elements, powersgd's rank above min(rows, cols), or non-finite input under
// NonFinitePolicy::kRaise.
CompressionStats compressed_allreduce(Communicator& comm, std::span<float> data, CompressionState& state,
                                      const CompressedAllreduceOptions& options);

}  // namespace braid::compress
