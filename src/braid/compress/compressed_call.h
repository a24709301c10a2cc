// Internal: one compressed allreduce in progress, as the per-codec schemes
// (compressed_allreduce_<scheme>.cc) see it, and what they share: scratch memory reused
// across calls, error-feedback arithmetic, shard bounds, checked decoding of a peer's payload
// and the wire-volume model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/compress/codec.h"
#include "braid/compress/compressed_allreduce.h"

namespace braid::compress {

struct CompressedCall {
  Communicator& comm;
  std::span<float> data;
  CompressionState& state;
  const CompressedAllreduceOptions& options;
  const Codec& codec;
  bool error_feedback = false;
  EncodeOptions encode;  // seed, checksum, non-finite policy for every encode of this call
  std::string op;        // "compressed_allreduce(int8) of 'fc1.weight'"
  CompressionStats& stats;

  int rank() const { return comm.rank(); }
  int size() const { return comm.size(); }
  // Scratch reused across calls (per communicator); `slot` tells simultaneous buffers apart.
  // Contents are unspecified on return.
  std::span<float> floats(int slot, std::size_t count) const;
  std::span<std::byte> bytes(int slot, std::size_t count) const;
  // This rank's state buffer of `role` for the tensor (zero-filled when created).
  std::span<float> state_buffer(std::string_view role, std::size_t count) const;

  // Errors name world ranks (what braid-run prints): the host-striped scheme runs this call on
  // a stripe of one rank per host, whose own numbering would mislead.
  int label(int peer) const { return peer < 0 ? peer : comm.world_rank(peer); }
  ErrorContext context(int peer) const { return {.rank = label(comm.rank()), .peer = label(peer), .op = op}; }

  // Decodes `payload`, sent by comm rank `peer`, into out. The header must name this call's
  // codec (and seed, where the codec has one): another codec or seed means the ranks disagree
  // (braid::Mismatch). A payload failing its checks raises braid::Corrupt naming the sender
  // and this operation. Either error poisons the communicator first, so that peers waiting on
  // this rank fail instead of hanging.
  void decode_from(int peer, std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const;

  // Under NonFinitePolicy::kRaise, agrees with every rank (a small allreduce) whether any
  // rank's `x` holds NaN or Inf and, if so, throws InvalidArgument on every rank naming the
  // first such rank, leaving the communicator usable. Nothing under kPropagate.
  void check_finite(std::span<const float> x) const;

  // Runs the tamper hook (tests only) on a payload about to be sent.
  void before_send(int peer, std::span<std::byte> payload) const {
    if (options.tamper) options.tamper(peer, payload);
  }
  // Raises `error` on this rank after poisoning the communicator (E: the concrete class, so
  // that the exception the caller catches is a Corrupt or Mismatch, not a sliced Error).
  template <class E>
  [[noreturn]] void fail(E error) const {
    fail_with(std::make_exception_ptr(std::move(error)));
  }
  [[noreturn]] void fail_with(std::exception_ptr error) const;
};

// [begin, end) of shard p when `count` elements are cut into `parts` shards whose sizes are
// multiples of `align` (the last may be short): equal within one `align` unit.
struct ShardBounds {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};
ShardBounds shard_bounds(std::size_t count, int parts, int p, std::size_t align);

// The shard alignment of the two-stage scheme: the codec's block (int8, sign), so that no
// block straddles two shards, else 16 elements (a cache line of fp32).
std::size_t two_stage_shard_align(const CodecSpec& spec);

// Bytes rank `rank` sends in a ring allreduce of `count` fp32 elements over `ranks` ranks:
// reduce-scatter and allgather each send n-1 of the ring's n blocks (collectives/patterns/
// ring.h), about 2(n-1)/n of the tensor (0 on one rank).
std::uint64_t ring_allreduce_wire_bytes(std::size_t count, int ranks, int rank);

// BRAID_CHECKSUM=1: the default of CompressedAllreduceOptions::checksum.
bool checksum_default();

// compensated = x + residual (error feedback's input correction).
void add_into(std::span<float> x, std::span<const float> residual);
// residual = compensated - decoded (what compression dropped this step); non-finite -> 0.
// residual and compensated may be the same span.
void store_dropped(std::span<float> residual, std::span<const float> compensated, std::span<const float> decoded);

// The schemes, one file each; compressed_allreduce() dispatches on the codec.
void allreduce_dense(const CompressedCall& call);       // none
void allreduce_two_stage(const CompressedCall& call);   // fp16, bf16, int8, sign
// Stages 1 and 2 of allreduce_two_stage on equal shards: call.data holds size() x shard.size()
// elements, rank p reduces [p S, (p+1) S) into `shard` (compressed_reduce_scatter.h).
void reduce_scatter_two_stage(const CompressedCall& call, std::span<float> shard);
// The same across hosts: fp32 inside each host, two-stage over the stripes between hosts.
// REQUIRES: host_striped_applies(call.comm).
void allreduce_two_stage_host_striped(const CompressedCall& call);
// Several hosts, each with the same number (>= 2) of ranks.
bool host_striped_applies(Communicator& comm);
// Whether this call takes allreduce_two_stage_host_striped: a two-stage codec, host_striped
// (or BRAID_COMPRESS_HOST_STRIPED) asking for it, and host_striped_applies.
bool takes_host_striped(Communicator& comm, const CompressedAllreduceOptions& options);
void allreduce_topk(const CompressedCall& call);
void allreduce_randomk(const CompressedCall& call);
void allreduce_powersgd(const CompressedCall& call);

}  // namespace braid::compress
