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

}  // namespace

std::size_t two_stage_shard_align(const CodecSpec& spec) {
  std::uint32_t block = spec.effective_block();
  return block != 0 ? block : 16;
}

void allreduce_two_stage(const CompressedCall& call) {
  const int n = call.size();
  const int me = call.rank();
  const std::size_t count = call.data.size();
  const std::size_t align = two_stage_shard_align(call.codec.spec());
  std::vector<ShardBounds> shards(static_cast<std::size_t>(n));
  std::vector<std::int64_t> send_bytes(shards.size()), send_displs(shards.size());
  std::size_t total = 0, largest = 0;
  for (int p = 0; p < n; ++p) {
    auto& s = shards[static_cast<std::size_t>(p)];
    s = shard_bounds(count, n, p, align);
    std::size_t bytes = call.codec.max_encoded_bytes(static_cast<std::int64_t>(s.size()), {});
    send_bytes[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(bytes);
    send_displs[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(total);
    total += bytes;
    largest = std::max(largest, bytes);
  }
  const ShardBounds mine = shards[static_cast<std::size_t>(me)];
  const auto my_bytes = static_cast<std::size_t>(send_bytes[static_cast<std::size_t>(me)]);

  // Stage 1: compensate, encode every shard, keep what the encoding dropped. The input is
  // read in place (call.data is written only in stage 3); with error feedback the compensated
  // values are formed in the residual buffer itself, which then becomes the new residual.
  std::span<const float> source = call.data;
  std::span<float> residual;
  if (call.error_feedback) {
    residual = call.state_buffer(kResidualRole, count);
    add_into(residual, call.data);
    source = residual;
  }
  call.check_finite(source);
  std::span<float> decoded = call.error_feedback ? call.floats(1, count) : std::span<float>();
  std::span<std::byte> outgoing = call.bytes(0, total);
  for (int p = 0; p < n; ++p) {
    auto i = static_cast<std::size_t>(p);
    auto slot = outgoing.subspan(static_cast<std::size_t>(send_displs[i]), static_cast<std::size_t>(send_bytes[i]));
    std::size_t written =
        call.codec.encode(source.subspan(shards[i].begin, shards[i].size()), {}, call.encode, slot,
                          decoded.empty() ? decoded : decoded.subspan(shards[i].begin, shards[i].size()));
    expect_exact_size(call, written, slot.size());
    if (p != me) call.before_send(p, slot);
  }
  if (call.error_feedback) store_dropped(residual, residual, decoded);
  call.stats.payload_bytes = total;

  std::span<std::byte> incoming = call.bytes(1, my_bytes * static_cast<std::size_t>(n));
  std::vector<std::int64_t> recv_bytes(shards.size(), static_cast<std::int64_t>(my_bytes)), recv_displs(shards.size());
  for (int p = 0; p < n; ++p) recv_displs[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(my_bytes) * p;
  alltoallv(call.comm, outgoing.data(), send_bytes.data(), send_displs.data(), incoming.data(), recv_bytes.data(),
            recv_displs.data(), DType::kU8);

  // Stage 2: reduce this rank's shard in fp32, in rank order, and re-encode it.
  std::span<float> shard_sum = call.floats(2, mine.size());
  std::fill(shard_sum.begin(), shard_sum.end(), 0.0f);
  for (int p = 0; p < n; ++p) {
    call.decode_from(p, incoming.subspan(my_bytes * static_cast<std::size_t>(p), my_bytes), shard_sum,
                     DecodeMode::kAccumulate);
  }
  if (call.options.average) divide_by(shard_sum.data(), shard_sum.size(), DType::kF32, n);
  std::span<float> shard_residual =
      call.error_feedback ? call.state_buffer(kShardResidualRole, mine.size()) : std::span<float>();
  if (call.error_feedback) add_into(shard_sum, shard_residual);
  std::span<std::byte> gathered = call.bytes(2, largest * static_cast<std::size_t>(n));
  std::span<std::byte> own_slot = gathered.subspan(largest * static_cast<std::size_t>(me), largest);
  std::span<float> shard_decoded = call.error_feedback ? call.floats(1, mine.size()) : std::span<float>();
  expect_exact_size(call, call.codec.encode(shard_sum, {}, call.encode, own_slot, shard_decoded), my_bytes);
  if (call.error_feedback) store_dropped(shard_residual, shard_sum, shard_decoded);
  std::fill(own_slot.begin() + static_cast<std::ptrdiff_t>(my_bytes), own_slot.end(), std::byte{0});
  call.before_send(-1, own_slot.first(my_bytes));

  // Stage 3: everyone gets every encoded shard and decodes all of them, its own included.
  allgather(call.comm, own_slot.data(), gathered.data(), static_cast<std::int64_t>(largest), DType::kU8);
  for (int p = 0; p < n; ++p) {
    auto i = static_cast<std::size_t>(p);
    call.decode_from(p, gathered.subspan(largest * i, static_cast<std::size_t>(send_bytes[i])),
                     call.data.subspan(shards[i].begin, shards[i].size()), DecodeMode::kOverwrite);
  }
  auto peers = static_cast<std::uint64_t>(n - 1);
  call.stats.wire_bytes = total - my_bytes + peers * largest;
}

}  // namespace braid::compress
