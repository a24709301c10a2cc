// compressed_reduce_scatter(): validates the call and runs stages 1 and 2 of the two-stage
// scheme (compressed_allreduce_two_stage.cc) on ZeRO's equal shards.
#include "braid/compress/compressed_reduce_scatter.h"

#include <fmt/format.h>

#include "braid/collectives/collective_queue.h"
#include "braid/comm/communicator_internal.h"
#include "braid/compress/compressed_call.h"

namespace braid::compress {

namespace {

bool two_stage_codec(CodecId id) {
  return id == CodecId::kFp16 || id == CodecId::kBf16 || id == CodecId::kInt8 || id == CodecId::kSign;
}

}  // namespace

CompressionStats compressed_reduce_scatter(Communicator& comm, std::span<float> data, std::span<float> shard,
                                           CompressionState& state, const CompressedAllreduceOptions& options) {
  std::string op = fmt::format("compressed_reduce_scatter({}) of '{}'", to_string(options.codec), options.name);
  ErrorContext context{.rank = comm.rank(), .op = op};
  if (!two_stage_codec(options.codec.id)) {
    throw InvalidArgument(context, fmt::format("codec {}: a reduce-scatter is compressed with fp16, bf16, int8 or sign",
                                               to_string(options.codec)));
  }
  const auto n = static_cast<std::size_t>(comm.size());
  if (data.size() != n * shard.size()) {
    throw InvalidArgument(context, fmt::format("{} elements are not {} shards of {}", data.size(), n, shard.size()));
  }
  auto codec = make_codec(options.codec);
  CompressionStats stats{.codec = options.codec, .elements = data.size()};
  stats.dense_wire_bytes = (n - 1) * shard.size() * sizeof(float);
  CompressedCall call{.comm = comm,
                      .data = data,
                      .state = state,
                      .options = options,
                      .codec = *codec,
                      .error_feedback = options.error_feedback.value_or(false),
                      // Non-finite input is refused on every rank at once by check_finite().
                      .encode = {.checksum = options.checksum.value_or(checksum_default()),
                                 .non_finite = NonFinitePolicy::kPropagate},
                      .op = std::move(op),
                      .stats = stats};
  std::uint64_t sent_before = detail::CollectiveAccess(comm).bytes_sent();
  reduce_scatter_two_stage(call, shard);
  stats.transport_bytes = detail::CollectiveAccess(comm).bytes_sent() - sent_before;
  return stats;
}

Work icompressed_reduce_scatter(Communicator& comm, std::span<float> data, std::span<float> shard,
                                CompressionState& state, CompressedAllreduceOptions options, CompressionStats* stats) {
  auto& queue = detail::CollectiveAccess(comm).attachment<CollectiveQueue>();
  std::string op = fmt::format("compressed_reduce_scatter of '{}'", options.name);
  return queue.submit({.rank = comm.rank(), .op = op}, [&comm, data, shard, &state, options = std::move(options), stats] {
    CompressionStats figures = compressed_reduce_scatter(comm, data, shard, state, options);
    if (stats != nullptr) *stats = figures;
  });
}

}  // namespace braid::compress
