// quantized_allgather(): encode this rank's shard (int8, bf16 or fp16 codec), allgather the payloads as bytes,
// decode all of them. The whole operation runs as one task of the communicator's collective
// queue, so the scratch payload buffer is never shared by two operations in flight.
#include "braid/compress/quantized_allgather.h"

#include <cmath>

#include <fmt/format.h>

#include "braid/collectives/collective_queue.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator_internal.h"
#include "braid/compress/compressed_call.h"

namespace braid::compress {

namespace {

// The byte scratch slot of CompressedCall used here: apart from the two-stage scheme's 0..2,
// should a blocking compressed allreduce be encoding on the caller's thread meanwhile.
constexpr int kGatherSlot = 8;

CodecSpec spec_of(const QuantizedAllgatherOptions& options) { return {.id = options.codec, .block = options.block}; }

// kRaise: the first non-finite decoded value, by rank. The int8 codec turns a block holding NaN
// or Inf into NaN in each of its elements (codec.h), and a finite block decodes finite, so the
// first element of every block tells; the 16-bit codecs carry every value (block 1).
void refuse_non_finite(const CompressedCall& call, const float* full, std::size_t count, std::size_t block,
                       const std::string& name) {
  for (int p = 0; p < call.size(); ++p) {
    const float* shard = full + static_cast<std::size_t>(p) * count;
    for (std::size_t first = 0; first < count; first += block) {
      if (std::isfinite(shard[first])) continue;
      throw InvalidArgument(call.context(p),
                            fmt::format("rank {}'s shard of '{}' holds a non-finite value (NaN or Inf) in elements "
                                        "[{}, {}); refused under NonFinitePolicy::kRaise (every rank decoded the "
                                        "block as NaN)",
                                        call.label(p), name, first, std::min(count, first + block)));
    }
  }
}

void gather(Communicator& comm, const float* shard, std::size_t count, float* full,
            const QuantizedAllgatherOptions& options, CompressionStats& stats) {
  const int n = comm.size();
  CompressedAllreduceOptions call_options{.codec = spec_of(options), .name = options.name};
  auto codec = make_codec(call_options.codec);
  CompressionState no_state;  // quantising weights keeps no residual: the owner keeps the exact values
  CompressedCall call{.comm = comm,
                      .data = std::span<float>(full, count * static_cast<std::size_t>(n)),
                      .state = no_state,
                      .options = call_options,
                      .codec = *codec,
                      .encode = {.checksum = options.checksum.value_or(checksum_default())},
                      .op = fmt::format("quantized_allgather({}) of '{}'", to_string(call_options.codec), options.name),
                      .stats = stats};
  const std::size_t slot = codec->max_encoded_bytes(static_cast<std::int64_t>(count), {});
  std::span<std::byte> gathered = call.bytes(kGatherSlot, slot * static_cast<std::size_t>(n));
  std::span<std::byte> own = gathered.subspan(slot * static_cast<std::size_t>(comm.rank()), slot);
  if (codec->encode({shard, count}, {}, call.encode, own) != slot) {
    call.fail(Corrupt(call.context(-1), fmt::format("the {} codec wrote another size than it announced",
                                                    to_string(call_options.codec))));
  }
  allgather(comm, own.data(), gathered.data(), static_cast<std::int64_t>(slot), DType::kU8);
  for (int p = 0; p < n; ++p) {
    call.decode_from(p, gathered.subspan(slot * static_cast<std::size_t>(p), slot),
                     {full + static_cast<std::size_t>(p) * count, count}, DecodeMode::kOverwrite);
  }
  stats.payload_bytes = slot;
  stats.wire_bytes = static_cast<std::uint64_t>(n - 1) * slot;
  if (options.non_finite == NonFinitePolicy::kRaise) {
    std::size_t block = options.codec == CodecId::kInt8 ? call_options.codec.effective_block() : 1;
    refuse_non_finite(call, full, count, block, options.name);
  }
}

void check_arguments(Communicator& comm, const float* shard, std::int64_t count, const float* full,
                     const QuantizedAllgatherOptions& options) {
  ErrorContext context{.rank = comm.rank(), .op = fmt::format("quantized_allgather of '{}'", options.name)};
  if (count < 0) throw InvalidArgument(context, fmt::format("negative count {}", count));
  if (count > 0 && (shard == nullptr || full == nullptr)) throw InvalidArgument(context, "null buffer");
  if (options.codec != CodecId::kInt8 && options.codec != CodecId::kBf16 && options.codec != CodecId::kFp16) {
    throw InvalidArgument(context, fmt::format("codec {}: the weights are gathered as int8, bf16 or fp16",
                                               to_string(CodecSpec{.id = options.codec})));
  }
  if (options.block > kMaxBlock) {
    throw InvalidArgument(context, fmt::format("block {} above the int8 codec's maximum {}", options.block, kMaxBlock));
  }
}

}  // namespace

std::size_t quantized_allgather_payload_bytes(std::int64_t count, std::uint32_t block, CodecId codec) {
  if (count == 0) return 0;  // nothing is sent
  return make_codec({.id = codec, .block = block})->max_encoded_bytes(count, {});
}

Work iquantized_allgather(Communicator& comm, const float* shard, std::int64_t count, float* full,
                          QuantizedAllgatherOptions options, CompressionStats* stats) {
  check_arguments(comm, shard, count, full, options);
  auto& queue = detail::CollectiveAccess(comm).attachment<CollectiveQueue>();
  std::string op = fmt::format("quantized_allgather of '{}'", options.name);
  return queue.submit({.rank = comm.rank(), .op = op}, [&comm, shard, count, full, options = std::move(options), stats] {
    CompressionStats figures{.codec = spec_of(options), .elements = static_cast<std::uint64_t>(count)};
    figures.dense_wire_bytes = static_cast<std::uint64_t>(comm.size() - 1) * static_cast<std::uint64_t>(count) * 4;
    std::uint64_t sent_before = detail::CollectiveAccess(comm).bytes_sent();
    if (count > 0) gather(comm, shard, static_cast<std::size_t>(count), full, options, figures);
    figures.transport_bytes = detail::CollectiveAccess(comm).bytes_sent() - sent_before;
    if (stats != nullptr) *stats = figures;
  });
}

CompressionStats quantized_allgather(Communicator& comm, const float* shard, std::int64_t count, float* full,
                                     const QuantizedAllgatherOptions& options) {
  CompressionStats stats;
  iquantized_allgather(comm, shard, count, full, options, &stats).wait();
  return stats;
}

}  // namespace braid::compress
