// compressed_allreduce(): validates the call, picks the scheme for the codec, and accounts
// for what it moved. The schemes live in compressed_allreduce_<scheme>.cc.
#include "braid/compress/compressed_allreduce.h"

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/fnv1a.h"
#include "braid/base/splitmix64.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/fault_point.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/comm/communicator_internal.h"
#include "braid/compress/compressed_call.h"
#include "braid/compress/payload_header.h"
#include "braid/compress/random_indices.h"

namespace braid::compress {

namespace {

// Scratch memory of the compressed collectives, kept with the communicator so that a training
// loop's buffers are allocated (and page-faulted) once, not every step.
class CompressionScratch final : public CommAttachment {
 public:
  std::span<float> floats(int slot, std::size_t count) { return grow(floats_, slot, count); }
  std::span<std::byte> bytes(int slot, std::size_t count) { return grow(bytes_, slot, count); }

 private:
  template <typename T>
  static std::span<T> grow(std::vector<std::vector<T>>& slots, int slot, std::size_t count) {
    if (slots.size() <= static_cast<std::size_t>(slot)) slots.resize(static_cast<std::size_t>(slot) + 1);
    auto& buffer = slots[static_cast<std::size_t>(slot)];
    if (buffer.size() < count) buffer.resize(count);
    return std::span<T>(buffer.data(), count);
  }
  std::vector<std::vector<float>> floats_;
  std::vector<std::vector<std::byte>> bytes_;
};

// auto: sign's payload is 1/31 of fp32, so the fp32 traffic inside the hosts costs more than
// the link bytes striping saves (measured: 2 emulated hosts x 2 ranks over 1 Gbit/s, 8 MiB:
// sign 46.4 ms striped vs 30.7 flat; fp16 63.5 vs 70.8; docs/performance.md).
bool host_striped_default(CodecId codec) {
  const std::string value = env::get_choice(env::kCompressHostStriped);
  if (value == "auto") return codec != CodecId::kSign;
  return value == "1";
}

// The seed of a call: a pure function of what every rank agrees on (step and name), so that
// randomk draws the same coordinates everywhere and PowerSGD starts from the same Q: FNV-1a of
// the name (std::hash may differ between standard libraries), stepped `step` times along the
// SplitMix64 sequence and mixed by its finaliser (base/splitmix64.h).
std::uint64_t call_seed(const std::string& name, std::int64_t step) {
  Fnv1a h;
  h.add(name);
  return SplitMix64(h.value() + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(step)).next();
}

}  // namespace

bool checksum_default() { return env::get_choice(env::kChecksum) == "1"; }

double CompressionStats::compression_ratio() const {
  return payload_bytes == 0 ? 1.0 : static_cast<double>(elements * sizeof(float)) / static_cast<double>(payload_bytes);
}

double CompressionStats::wire_fraction() const {
  return dense_wire_bytes == 0 ? 0.0 : static_cast<double>(wire_bytes) / static_cast<double>(dense_wire_bytes);
}

CompressionStats& CompressionStats::operator+=(const CompressionStats& other) {
  elements += other.elements;
  payload_bytes += other.payload_bytes;
  wire_bytes += other.wire_bytes;
  dense_wire_bytes += other.dense_wire_bytes;
  transport_bytes += other.transport_bytes;
  return *this;
}

std::span<float> CompressedCall::floats(int slot, std::size_t count) const {
  return detail::CollectiveAccess(comm).attachment<CompressionScratch>().floats(slot, count);
}

std::span<std::byte> CompressedCall::bytes(int slot, std::size_t count) const {
  return detail::CollectiveAccess(comm).attachment<CompressionScratch>().bytes(slot, count);
}

std::span<float> CompressedCall::state_buffer(std::string_view role, std::size_t count) const {
  return state.buffer(options.name, role, count);
}

void CompressedCall::fail_with(std::exception_ptr error) const {
  detail::CollectiveAccess(comm).fail_world(std::move(error));
}

void CompressedCall::decode_from(int peer, std::span<const std::byte> payload, std::span<float> out,
                                 DecodeMode mode) const {
  try {
    PayloadHeader header = read_payload_header(payload);
    CodecId expected = codec.spec().id;
    bool fallback = expected == CodecId::kPowerSgd && header.codec == CodecId::kNone;
    if (header.codec != expected && !fallback) {
      fail(Mismatch(context(peer), fmt::format("rank {} sent a {} payload, this rank expects {}", label(peer),
                                               codec_name(header.codec), codec_name(expected))));
    }
    if (expected == CodecId::kRandomK && header.seed != encode.seed) {
      fail(Mismatch(context(peer), fmt::format("rank {} drew its coordinates from seed {:#x}, this rank from {:#x} "
                                               "(different step or tensor name)",
                                               label(peer), header.seed, encode.seed)));
    }
    codec.decode(payload, out, mode);
  } catch (const Corrupt& e) {
    fail(Corrupt(context(peer), fmt::format("payload from rank {}: {}", label(peer), e.detail())));
  } catch (const InvalidArgument& e) {  // a peer's element count differs from ours
    fail(Mismatch(context(peer), fmt::format("payload from rank {}: {}", label(peer), e.detail())));
  }
}

void CompressedCall::check_finite(std::span<const float> x) const {
  if (options.non_finite != NonFinitePolicy::kRaise) return;
  std::size_t bad = 0;
  while (bad < x.size() && std::isfinite(x[bad])) ++bad;
  std::int32_t first_bad_rank = bad < x.size() ? comm.rank() : std::numeric_limits<std::int32_t>::max();
  allreduce(comm, &first_bad_rank, &first_bad_rank, 1, DType::kI32, ReduceOp::kMin);
  if (first_bad_rank == std::numeric_limits<std::int32_t>::max()) return;
  std::string where = first_bad_rank == comm.rank() ? fmt::format(" (element {} is {})", bad, x[bad]) : "";
  throw InvalidArgument(context(first_bad_rank),
                        fmt::format("rank {}'s input holds a non-finite value{}; refused under NonFinitePolicy::kRaise",
                                    label(first_bad_rank), where));
}

ShardBounds shard_bounds(std::size_t count, int parts, int p, std::size_t align) {
  std::size_t units = (count + align - 1) / align;
  auto unit_at = [&](int q) { return units * static_cast<std::size_t>(q) / static_cast<std::size_t>(parts); };
  return {std::min(count, unit_at(p) * align), std::min(count, unit_at(p + 1) * align)};
}

std::uint64_t ring_allreduce_wire_bytes(std::size_t count, int ranks, int rank) {
  std::uint64_t elements = 0;
  for (int step = 0; step + 1 < ranks; ++step) {
    auto c = static_cast<std::int64_t>(count);
    elements += static_cast<std::uint64_t>(ring::block(c, ranks, ring::reduce_scatter_send_block(rank, step, ranks)).count);
    elements += static_cast<std::uint64_t>(ring::block(c, ranks, ring::allgather_send_block(rank, step, ranks)).count);
  }
  return elements * sizeof(float);
}

void add_into(std::span<float> x, std::span<const float> residual) {
  float* __restrict out = x.data();
  const float* __restrict add = residual.data();
  for (std::size_t i = 0; i < x.size(); ++i) out[i] += add[i];
}

void store_dropped(std::span<float> residual, std::span<const float> compensated, std::span<const float> decoded) {
  // A non-finite value never enters the residual: the step that met it decodes to NaN (the
  // caller sees it), and later steps start clean instead of carrying NaN forever. The test is
  // on the exponent bits so that the loop vectorises (std::isfinite does not, here).
  for (std::size_t i = 0; i < residual.size(); ++i) {
    float dropped = compensated[i] - decoded[i];
    std::uint32_t bits = std::bit_cast<std::uint32_t>(dropped);
    residual[i] = (bits & 0x7f800000u) != 0x7f800000u ? dropped : 0.0f;
  }
}

bool takes_host_striped(Communicator& comm, const CompressedAllreduceOptions& options) {
  const CodecId id = options.codec.id;
  const bool two_stage = id == CodecId::kFp16 || id == CodecId::kBf16 || id == CodecId::kInt8 || id == CodecId::kSign;
  return two_stage && options.host_striped.value_or(host_striped_default(id)) && host_striped_applies(comm);
}

CompressionStats compressed_allreduce(Communicator& comm, std::span<float> data, CompressionState& state,
                                      const CompressedAllreduceOptions& options) {
  UserCallFaultPoint fault_point(comm, OpKind::kAllreduce);
  auto codec = make_codec(options.codec);
  std::string op = fmt::format("compressed_allreduce({}) of '{}'", to_string(options.codec), options.name);
  if (options.shape.rows != 0 || options.shape.cols != 0) {
    if (!options.shape.is_matrix() || options.shape.rows * options.shape.cols != static_cast<std::int64_t>(data.size())) {
      throw InvalidArgument({.rank = comm.rank(), .op = op},
                            fmt::format("shape {}x{} does not hold {} elements", options.shape.rows,
                                        options.shape.cols, data.size()));
    }
  }
  CompressionStats stats{.codec = options.codec, .elements = data.size()};
  stats.dense_wire_bytes = ring_allreduce_wire_bytes(data.size(), comm.size(), comm.rank());
  CompressedCall call{.comm = comm,
                      .data = data,
                      .state = state,
                      .options = options,
                      .codec = *codec,
                      .error_feedback = options.codec.id != CodecId::kNone &&
                                        options.error_feedback.value_or(options.codec.biased()),
                      .encode = {.seed = call_seed(options.name, options.step),
                                 .checksum = options.checksum.value_or(checksum_default()),
                                 // check_finite() refuses non-finite input on every rank at once;
                                 // a codec raising on one rank alone would leave the others waiting.
                                 .non_finite = NonFinitePolicy::kPropagate},
                      .op = std::move(op),
                      .stats = stats};
  std::uint64_t sent_before = detail::CollectiveAccess(comm).bytes_sent();
  switch (options.codec.id) {
    case CodecId::kNone: allreduce_dense(call); break;
    case CodecId::kFp16:
    case CodecId::kBf16:
    case CodecId::kInt8:
    case CodecId::kSign:
      if (takes_host_striped(comm, options)) {
        allreduce_two_stage_host_striped(call);
      } else {
        allreduce_two_stage(call);
      }
      break;
    case CodecId::kTopK: allreduce_topk(call); break;
    case CodecId::kRandomK: allreduce_randomk(call); break;
    case CodecId::kPowerSgd: allreduce_powersgd(call); break;
  }
  stats.transport_bytes = detail::CollectiveAccess(comm).bytes_sent() - sent_before;
  return stats;
}

}  // namespace braid::compress
