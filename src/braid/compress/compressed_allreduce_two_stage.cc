// The two-stage compressed allreduce of fp16, bf16, int8 and sign (1-bit Adam, Tang et al.
// 2021; ZeRO++ qgZ, Wang et al. 2023). Re-quantising at every hop of a ring would round the
// partial sums n-1 times and compound the error; here every value is rounded twice at most:
//   1. each rank encodes its (error-compensated) tensor shard by shard, one shard per rank,
//      and sends shard p to rank p (alltoallv of payloads);
//   2. rank p decodes the n payloads of its shard, adds them in fp32 in rank order, divides
//      once for the average, adds its shard-side residual, encodes the result and keeps what
//      that encoding dropped as the next step's shard residual;
//   3. the encoded shards are allgathered and every rank decodes all n of them, its own too,
//      so every rank ends with the same bytes.
// Shards are cut on block boundaries so that int8/sign blocks never straddle two shards.
// Volume per rank: (n-1)/n of the compressed tensor twice, as a ring allreduce of it would.
// Stages 1 and 2 alone, on shards the caller cuts, are the compressed reduce-scatter of ZeRO++
// qgZ (reduce_scatter_two_stage; compressed_reduce_scatter.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "braid/base/reduce_op.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_call.h"

namespace braid::compress {

namespace {

// Receivers size their buffers from max_encoded_bytes, so the quantising codecs must fill it
// exactly (they do: their size depends on the element count alone). A codec that did not would
// leave the peers reading the wrong bytes: the communicator is poisoned, so they raise too.
void expect_exact_size(const CompressedCall& call, std::size_t written, std::size_t expected) {
  if (written != expected) {
    call.fail(Corrupt(call.context(-1),
                      fmt::format("codec wrote {} bytes where {} were announced", written, expected)));
  }
}

// Where each rank's shard lies in the tensor, and where its encoding lies in the buffers.
// Every encoding has its codec's announced size, a function of the shard's element count.
struct ShardLayout {
  std::vector<ShardBounds> shards;          // shard p is reduced by rank p
  std::vector<std::int64_t> encoded_bytes;  // of shard p: what this rank sends to rank p
  std::vector<std::int64_t> offsets;        // of shard p's encoding in the outgoing buffer
  std::size_t total = 0;                    // all n encodings, back to back
  std::size_t largest = 0;                  // the largest encoding: the allgather's slot size

  std::size_t bytes_of(int p) const { return static_cast<std::size_t>(encoded_bytes[static_cast<std::size_t>(p)]); }
  const ShardBounds& shard(int p) const { return shards[static_cast<std::size_t>(p)]; }
};

// The allreduce's shards: cut on the codec's block boundaries.
std::vector<ShardBounds> block_aligned_shards(const CompressedCall& call) {
  const std::size_t align = two_stage_shard_align(call.codec.spec());
  std::vector<ShardBounds> shards;
  for (int p = 0; p < call.size(); ++p) shards.push_back(shard_bounds(call.data.size(), call.size(), p, align));
  return shards;
}

ShardLayout layout_shards(const CompressedCall& call, const std::vector<ShardBounds>& shards) {
  const int n = call.size();
  ShardLayout layout;
  layout.shards.reserve(static_cast<std::size_t>(n));
  layout.encoded_bytes.reserve(static_cast<std::size_t>(n));
  layout.offsets.reserve(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const ShardBounds& s = shards[static_cast<std::size_t>(p)];
    std::size_t bytes = call.codec.max_encoded_bytes(static_cast<std::int64_t>(s.size()), {});
    layout.shards.push_back(s);
    layout.encoded_bytes.push_back(static_cast<std::int64_t>(bytes));
    layout.offsets.push_back(static_cast<std::int64_t>(layout.total));
    layout.total += bytes;
    layout.largest = std::max(layout.largest, bytes);
  }
  return layout;
}

// Stage 1, encoding: compensates the tensor, encodes it shard by shard into the outgoing
// buffer (shard p at offsets[p]) and keeps what the encoding dropped. The input is read in
// place (call.data is written only in stage 3); with error feedback the compensated values are
// formed in the residual buffer itself, which then becomes the new residual.
std::span<std::byte> encode_shards(const CompressedCall& call, const ShardLayout& layout) {
  const std::size_t count = call.data.size();
  std::span<const float> source = call.data;
  std::span<float> residual;
  if (call.error_feedback) {
    residual = call.state_buffer(kResidualRole, count);
    add_into(residual, call.data);
    source = residual;
  }
  call.check_finite(source);
  std::span<float> decoded = call.error_feedback ? call.floats(1, count) : std::span<float>();
  std::span<std::byte> outgoing = call.bytes(0, layout.total);
  for (int p = 0; p < call.size(); ++p) {
    const ShardBounds& s = layout.shard(p);
    auto offset = static_cast<std::size_t>(layout.offsets[static_cast<std::size_t>(p)]);
    std::span<std::byte> slot = outgoing.subspan(offset, layout.bytes_of(p));
    std::size_t written = call.codec.encode(source.subspan(s.begin, s.size()), {}, call.encode, slot,
                                            decoded.empty() ? decoded : decoded.subspan(s.begin, s.size()));
    expect_exact_size(call, written, slot.size());
    if (p != call.rank()) call.before_send(p, slot);
  }
  if (call.error_feedback) store_dropped(residual, residual, decoded);
  call.stats.payload_bytes = layout.total;
  return outgoing;
}

// Stage 1, exchange: sends shard p's encoding to rank p and returns the n encodings of this
// rank's shard, rank p's at p * bytes_of(rank).
std::span<const std::byte> exchange_shards(const CompressedCall& call, const ShardLayout& layout,
                                           std::span<const std::byte> outgoing) {
  const int n = call.size();
  const std::size_t mine = layout.bytes_of(call.rank());
  std::span<std::byte> incoming = call.bytes(1, mine * static_cast<std::size_t>(n));
  std::vector<std::int64_t> recv_bytes(static_cast<std::size_t>(n), static_cast<std::int64_t>(mine));
  std::vector<std::int64_t> recv_offsets(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) recv_offsets[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(mine) * p;
  alltoallv(call.comm, outgoing.data(), layout.encoded_bytes.data(), layout.offsets.data(), incoming.data(),
            recv_bytes.data(), recv_offsets.data(), DType::kU8);
  return incoming;
}

// Stage 2, reduction: decodes the n encodings of this rank's shard into `sum` (the shard's
// size), adding them in fp32 in rank order 0..n-1 (so every rank's figure is deterministic),
// and divides once for the average.
void sum_own_shard(const CompressedCall& call, const ShardLayout& layout, std::span<const std::byte> incoming,
                   std::span<float> sum) {
  const std::size_t my_bytes = layout.bytes_of(call.rank());
  std::fill(sum.begin(), sum.end(), 0.0f);
  for (int p = 0; p < call.size(); ++p) {
    call.decode_from(p, incoming.subspan(my_bytes * static_cast<std::size_t>(p), my_bytes), sum,
                     DecodeMode::kAccumulate);
  }
  if (call.options.average) divide_by(sum.data(), sum.size(), DType::kF32, call.size());
}

// Stage 2, re-encoding: adds the shard-side residual to the reduced shard and encodes the
// result into this rank's slot of `gathered` (zero-padded to the slot size), keeping what that
// encoding dropped as the next step's shard residual.
void encode_own_shard(const CompressedCall& call, const ShardLayout& layout, std::span<float> shard_sum,
                      std::span<std::byte> gathered) {
  const int me = call.rank();
  const std::size_t my_bytes = layout.bytes_of(me);
  std::span<float> shard_residual =
      call.error_feedback ? call.state_buffer(kShardResidualRole, shard_sum.size()) : std::span<float>();
  if (call.error_feedback) add_into(shard_sum, shard_residual);
  std::span<std::byte> own_slot = gathered.subspan(layout.largest * static_cast<std::size_t>(me), layout.largest);
  std::span<float> shard_decoded = call.error_feedback ? call.floats(1, shard_sum.size()) : std::span<float>();
  expect_exact_size(call, call.codec.encode(shard_sum, {}, call.encode, own_slot, shard_decoded), my_bytes);
  if (call.error_feedback) store_dropped(shard_residual, shard_sum, shard_decoded);
  std::fill(own_slot.begin() + static_cast<std::ptrdiff_t>(my_bytes), own_slot.end(), std::byte{0});
  call.before_send(-1, own_slot.first(my_bytes));
}

// Stage 3: allgathers the encoded shards (slot p of `gathered` is rank p's) and decodes all of
// them into call.data, this rank's own too, so that every rank ends with the same bytes.
void gather_and_decode_shards(const CompressedCall& call, const ShardLayout& layout, std::span<std::byte> gathered) {
  const std::size_t slot = layout.largest;
  allgather(call.comm, gathered.data() + slot * static_cast<std::size_t>(call.rank()), gathered.data(),
            static_cast<std::int64_t>(slot), DType::kU8);
  for (int p = 0; p < call.size(); ++p) {
    const ShardBounds& s = layout.shard(p);
    call.decode_from(p, gathered.subspan(slot * static_cast<std::size_t>(p), layout.bytes_of(p)),
                     call.data.subspan(s.begin, s.size()), DecodeMode::kOverwrite);
  }
}

}  // namespace

std::size_t two_stage_shard_align(const CodecSpec& spec) {
  std::uint32_t block = spec.effective_block();
  return block != 0 ? block : 16;
}

void allreduce_two_stage(const CompressedCall& call) {
  const int n = call.size();
  const ShardLayout layout = layout_shards(call, block_aligned_shards(call));
  std::span<std::byte> outgoing = encode_shards(call, layout);
  std::span<const std::byte> incoming = exchange_shards(call, layout, outgoing);
  std::span<std::byte> gathered = call.bytes(2, layout.largest * static_cast<std::size_t>(n));
  std::span<float> shard_sum = call.floats(2, layout.shard(call.rank()).size());
  sum_own_shard(call, layout, incoming, shard_sum);
  encode_own_shard(call, layout, shard_sum, gathered);
  gather_and_decode_shards(call, layout, gathered);
  // Stage 1 sends the other n-1 shards' encodings; the allgather of stage 3 sends n-1 slots.
  auto peers = static_cast<std::uint64_t>(n - 1);
  call.stats.wire_bytes = layout.total - layout.bytes_of(call.rank()) + peers * layout.largest;
}

// ZeRO's shards are equal, S = shard.size() elements each and rank p's at p x S, wherever the
// codec's blocks fall: each shard is encoded on its own, so its blocks start at its first
// element (the last block of a shard may be short) and none straddles two shards anyway.
void reduce_scatter_two_stage(const CompressedCall& call, std::span<float> shard) {
  const std::size_t s = shard.size();
  std::vector<ShardBounds> shards;
  for (std::size_t p = 0; p < static_cast<std::size_t>(call.size()); ++p) shards.push_back({p * s, (p + 1) * s});
  const ShardLayout layout = layout_shards(call, shards);
  std::span<const std::byte> incoming = exchange_shards(call, layout, encode_shards(call, layout));
  sum_own_shard(call, layout, incoming, shard);
  call.stats.wire_bytes = layout.total - layout.bytes_of(call.rank());
}

}  // namespace braid::compress
