// Scenario `zero_pp`: ZeRO++'s quantised collectives on real ranks (docs/zero.md "ZeRO++").
//
// qwZ, compress::quantized_allgather, over shard sizes 0, 1, 1023, 1024, 1025, 5000 (short last
// blocks, several blocks) and blocks of 1024 and 64, in place and not, blocking and async:
//  - every rank ends with the same bytes (a hash of the whole buffer, allgathered);
//  - every element is within the int8 bound of its owner's exact value, which every rank
//    regenerates (the inputs are a pure function of rank and index);
//  - zeros (an all-zero block, a padding tail, a shard of nothing but padding) come back +0.0;
//  - the stats are the predicted int8 payloads: 56 header bytes + 4 per block + 1 per element,
//    sent to n-1 peers; over TCP the transports measured exactly that;
//  - a NaN on one rank is refused on every rank naming that rank (kRaise), the communicator
//    still works after it, and kPropagate turns exactly that block into NaN everywhere; a
//    negative count, a null buffer or a block above the codec's maximum are refused at the call.
// The bound: the int8 codec (codec_int8.cc) rounds x * (127 / m) to the nearest integer q,
// |q - x * 127 / m| <= 1/2, and decodes q * (m / 127), so |x - x'| <= (m / 127) / 2 = scale / 2,
// plus the fp32 rounding of 127 / m, x * inv, m / 127 and q * scale (each relative 2^-24, at most
// m in size): 4 x 2^-24 x m, which the test allows as 2^-21 x m.
//
// qgZ, GradSync with zero_codec int8 at stages 1 and 2: every rank's shard equals, BIT FOR BIT,
// the reference built here from the public codec (each rank's bucket chunk encoded and decoded
// as its owner receives it, summed in rank order 0..n-1 from 0.0f, divided by n with
// base/reduce_op's divide_by), so the result is deterministic and the same whatever the
// transport; it is within the summed bound of the exact average; the padding is exactly 0; the
// wire bytes are (n-1) int8 payloads of a shard per bucket; error feedback keeps a residual only
// when asked for; zero_codec with stage 0, or a codec that is not two-stage, is refused.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/reduce_op.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/codec.h"
#include "braid/compress/codec_spec.h"
#include "braid/compress/quantized_allgather.h"
#include "braid/engine/grad_sync.h"
#include "gradient_model.h"
#include "scenario.h"
#include "scenario_checks.h"

namespace braid::testing {

namespace {

constexpr std::uint64_t kHeaderBytes = 56;  // payload_header.h

// Rank p's exact weight i: magnitudes from 1e-3 to 1e3 across blocks of 64, signs mixed; block
// 3 (of 64) all zeros; the last 7 elements zero, as ZeRO's padding.
float weight(int p, std::size_t i, std::size_t count) {
  if (i + 7 >= count || i / 64 == 3) return 0.0f;
  double magnitude = std::pow(10.0, static_cast<double>((i / 64 + static_cast<std::size_t>(p)) % 7) - 3.0);
  double wave = std::sin(0.37 * static_cast<double>(i) + 1.3 * p);
  return static_cast<float>(magnitude * wave);
}

std::uint64_t fnv1a(const float* data, std::size_t count) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < count * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

bool same_on_every_rank(Communicator& comm, std::uint64_t mine) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  allgather(comm, &mine, all.data(), 1, DType::kI64);
  for (std::uint64_t h : all) {
    if (h != mine) return false;
  }
  return true;
}

// Over TCP (the scenario's argument "tcp") the bytes measured on the transports are the
// predicted ones exactly; over shared memory the direct algorithms move most of them without
// messages, so only "no more than predicted" holds.
bool transport_agrees(const compress::CompressionStats& stats, bool over_tcp) {
  return over_tcp ? stats.transport_bytes == stats.wire_bytes : stats.transport_bytes <= stats.wire_bytes;
}

std::uint64_t int8_payload(std::uint64_t count, std::uint64_t block) {
  return count == 0 ? 0 : kHeaderBytes + 4 * ((count + block - 1) / block) + count;
}

// Every element of rank p's slice of `full` against its exact value: the bound of the file
// comment per block, and zeros exactly +0.0.
bool within_int8_bound(Communicator& comm, const std::vector<float>& full, std::size_t count, std::size_t block,
                       const std::string& what) {
  for (int p = 0; p < comm.size(); ++p) {
    for (std::size_t first = 0; first < count; first += block) {
      std::size_t last = std::min(count, first + block);
      float m = 0;
      for (std::size_t i = first; i < last; ++i) m = std::max(m, std::abs(weight(p, i, count)));
      for (std::size_t i = first; i < last; ++i) {
        float exact = weight(p, i, count);
        float got = full[static_cast<std::size_t>(p) * count + i];
        bool ok = exact == 0.0f ? std::bit_cast<std::uint32_t>(got) == 0u
                                : std::abs(got - exact) <= (m / 127.0f) / 2 + std::ldexp(m, -21);
        if (!ok) return fail(comm, fmt::format("{}: rank {}'s element {} is {}, exact {} (block max {})", what, p, i, got, exact, m));
      }
    }
  }
  return true;
}

bool one_gather(Communicator& comm, std::size_t count, std::uint32_t block, bool in_place, bool async, bool over_tcp) {
  const int n = comm.size();
  const std::string what = fmt::format("qwZ count {} block {}{}{}", count, block, in_place ? " in place" : "",
                                       async ? " async" : "");
  std::vector<float> shard(count), full(count * static_cast<std::size_t>(n), -1.0f);
  for (std::size_t i = 0; i < count; ++i) shard[i] = weight(comm.rank(), i, count);
  float* source = shard.data();
  if (in_place) {
    source = full.data() + static_cast<std::size_t>(comm.rank()) * count;
    std::copy(shard.begin(), shard.end(), source);
  }
  compress::QuantizedAllgatherOptions options{.block = block, .name = what};
  compress::CompressionStats stats;
  if (async) {
    compress::iquantized_allgather(comm, source, static_cast<std::int64_t>(count), full.data(), options, &stats).wait();
  } else {
    stats = compress::quantized_allgather(comm, source, static_cast<std::int64_t>(count), full.data(), options);
  }
  std::uint64_t payload = int8_payload(count, block == 0 ? compress::kDefaultBlock : block);
  if (stats.payload_bytes != payload || stats.wire_bytes != static_cast<std::uint64_t>(n - 1) * payload ||
      stats.dense_wire_bytes != static_cast<std::uint64_t>(n - 1) * count * 4 ||
      payload != compress::quantized_allgather_payload_bytes(static_cast<std::int64_t>(count), block)) {
    return fail(comm, fmt::format("{}: payload {} wire {} dense {} (want payload {})", what, stats.payload_bytes,
                                  stats.wire_bytes, stats.dense_wire_bytes, payload));
  }
  if (!transport_agrees(stats, over_tcp)) return fail(comm, fmt::format("{}: transport {} bytes", what, stats.transport_bytes));
  if (comm.rank() == 0 && count == 5000 && n > 1) {
    RANK_SAY("WIRE %s: %llu bytes (fp32 %llu, %.2fx), transport %llu", what.c_str(),
             static_cast<unsigned long long>(stats.wire_bytes), static_cast<unsigned long long>(stats.dense_wire_bytes),
             double(stats.dense_wire_bytes) / double(stats.wire_bytes),
             static_cast<unsigned long long>(stats.transport_bytes));
  }
  if (!same_on_every_rank(comm, fnv1a(full.data(), full.size()))) return fail(comm, what + ": ranks hold different bytes");
  return within_int8_bound(comm, full, count, block == 0 ? compress::kDefaultBlock : block, what);
}

// A NaN in rank `bad`'s shard: kRaise throws on every rank naming it, then the communicator is
// used again; kPropagate decodes exactly that block (of 64) as NaN everywhere.
bool non_finite(Communicator& comm) {
  const std::size_t count = 300;
  const int bad = comm.size() - 1;
  std::vector<float> shard(count, 0.5f), full(count * static_cast<std::size_t>(comm.size()));
  if (comm.rank() == bad) shard[130] = std::nanf("");
  bool ok = true;
  try {
    compress::quantized_allgather(comm, shard.data(), count, full.data(), {.block = 64, .name = "bucket 7"});
    ok = fail(comm, "a NaN weight was not refused");
  } catch (const InvalidArgument& e) {
    std::string want = fmt::format("rank {}'s shard of 'bucket 7' holds a non-finite value", bad);
    if (std::string(e.what()).find(want) == std::string::npos) ok = fail(comm, fmt::format("the NaN error reads: {}", e.what()));
  }
  compress::quantized_allgather(comm, shard.data(), count, full.data(),
                                {.block = 64, .name = "bucket 7", .non_finite = compress::NonFinitePolicy::kPropagate});
  for (int p = 0; p < comm.size(); ++p) {
    for (std::size_t i = 0; i < count; ++i) {
      bool nan_block = p == bad && i / 64 == 130 / 64;
      float got = full[static_cast<std::size_t>(p) * count + i];
      if (nan_block != std::isnan(got) || (!nan_block && got != 0.5f)) {
        return fail(comm, fmt::format("kPropagate: rank {}'s element {} is {}", p, i, got));
      }
    }
  }
  return ok;
}

bool quantized_allgathers(Communicator& comm, bool over_tcp) {
  bool ok = true;
  for (std::size_t count : {0, 1, 1023, 1024, 1025, 5000}) {
    for (std::uint32_t block : {0u, 64u}) ok = one_gather(comm, count, block, false, false, over_tcp) && ok;
  }
  ok = one_gather(comm, 5000, 0, true, false, over_tcp) && ok;
  ok = one_gather(comm, 1025, 64, true, true, over_tcp) && ok;
  return non_finite(comm) && ok;
}

// What the owner of each shard of bucket b must hold under qgZ, from the public codec.
std::vector<float> qgz_reference(Communicator& comm, const std::vector<std::vector<float>>& buckets_by_rank,
                                 std::size_t shard) {
  auto codec = compress::make_codec({.id = compress::CodecId::kInt8});
  std::vector<float> sum(shard, 0.0f), decoded(shard);
  std::vector<std::byte> payload(codec->max_encoded_bytes(static_cast<std::int64_t>(shard), {}));
  for (const std::vector<float>& bucket : buckets_by_rank) {
    std::span<const float> chunk(bucket.data() + static_cast<std::size_t>(comm.rank()) * shard, shard);
    codec->encode(chunk, {}, {}, payload);
    codec->decode(payload, decoded);
    for (std::size_t i = 0; i < shard; ++i) sum[i] = sum[i] + decoded[i];
  }
  divide_by(sum.data(), sum.size(), DType::kF32, comm.size());
  return sum;
}

const std::vector<std::int64_t> kCounts = {1000, 0, 3, 37, 300000, 1, 5, 2, 70000, 11};

// Rank p's contents of bucket b (padded) at `step`: GradientModel::fill's values at the plan's offsets.
std::vector<float> bucket_of(const GradSync& sync, int b, int p, int step, std::size_t padded) {
  const engine::Bucket& bucket = sync.plan().buckets[static_cast<std::size_t>(b)];
  std::vector<float> flat(padded, 0.0f);
  for (std::size_t k = 0; k < bucket.params.size(); ++k) {
    auto param = static_cast<std::size_t>(bucket.params[k]);
    for (std::int64_t j = 0; j < kCounts[param]; ++j) {
      flat[static_cast<std::size_t>(bucket.offsets[k] + j)] = gradient_pattern(p, step, param, static_cast<std::size_t>(j), 5);
    }
  }
  return flat;
}

bool qgz_steps(Communicator& comm, int stage, bool error_feedback, bool over_tcp) {
  const int n = comm.size();
  const std::string what = fmt::format("qgZ stage {}{}", stage, error_feedback ? " with error feedback" : "");
  GradSync sync(comm, {.bucket_cap = "1", .rebuild_buckets = false, .zero_stage = stage,
                       .zero_codec = {.id = compress::CodecId::kInt8}, .zero_error_feedback = error_feedback});
  GradientModel model(sync, kCounts);
  for (int step = 0; step < 2; ++step) {
    model.fill(comm.rank(), step, 5);
    for (int p = static_cast<int>(kCounts.size()) - 1; p >= 0; --p) sync.mark_ready(p);
    GradSyncStats stats = sync.finish();
    std::uint64_t want_wire = 0;
    for (int b = 0; b < static_cast<int>(sync.plan().buckets.size()); ++b) {
      BucketShard s = sync.bucket_shard(b);
      want_wire += static_cast<std::uint64_t>(n - 1) * int8_payload(static_cast<std::uint64_t>(s.shard), 1024);
      std::vector<std::vector<float>> by_rank;
      for (int p = 0; p < n; ++p) by_rank.push_back(bucket_of(sync, b, p, step, static_cast<std::size_t>(s.padded)));
      std::span<const float> got = sync.shard_gradient(b);
      std::vector<float> want = qgz_reference(comm, by_rank, static_cast<std::size_t>(s.shard));
      for (std::size_t i = 0; i < want.size(); ++i) {
        std::int64_t e = comm.rank() * s.shard + static_cast<std::int64_t>(i);
        bool padding = e >= sync.plan().buckets[static_cast<std::size_t>(b)].elements;
        if (padding && std::bit_cast<std::uint32_t>(got[i]) != 0u) return fail(comm, fmt::format("{}: padding {} is {}", what, e, got[i]));
        // Step 0 has no residual yet, so it must match the reference bit for bit.
        if (step == 0 && std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i])) {
          return fail(comm, fmt::format("{}: bucket {} element {} is {}, the rank-order reference {}", what, b, e, got[i], want[i]));
        }
        double exact = 0;
        for (int p = 0; p < n; ++p) exact += by_rank[static_cast<std::size_t>(p)][static_cast<std::size_t>(e)];
        exact /= n;
        // Each rank's value is off by at most its block's scale/2 (block max <= 0.25 x 12 x n):
        // the average by the mean of those, plus fp32 rounding of the sum.
        double bound = 0.25 * 12 * n / 127.0 / 2 + 1e-5 * (1 + std::abs(exact));
        if (!error_feedback && std::abs(got[i] - exact) > bound) {
          return fail(comm, fmt::format("{}: bucket {} element {} is {}, exact {}", what, b, e, got[i], exact));
        }
      }
    }
    if (stats.wire.wire_bytes != want_wire || !transport_agrees(stats.wire, over_tcp)) {
      return fail(comm, fmt::format("{}: wire {} bytes, predicted {}, transport {}", what, stats.wire.wire_bytes,
                                    want_wire, stats.wire.transport_bytes));
    }
    if (comm.rank() == 0 && n > 1 && step == 0) {
      RANK_SAY("WIRE %s: %llu bytes, DDP's allreduce %llu, transport %llu", what.c_str(),
               static_cast<unsigned long long>(stats.wire.wire_bytes),
               static_cast<unsigned long long>(stats.wire.dense_wire_bytes),
               static_cast<unsigned long long>(stats.wire.transport_bytes));
    }
  }
  if ((sync.compression_state().size() > 0) != error_feedback) {
    return fail(comm, fmt::format("{}: {} residual buffers", what, sync.compression_state().size()));
  }
  return true;
}

// Arguments checked at the call, on this rank alone (nothing is queued, the ranks stay in step).
bool qwz_refusals(Communicator& comm) {
  std::vector<float> buffer(4 * static_cast<std::size_t>(comm.size()));
  bool ok = throws_invalid(comm, "qwZ count -1", [&] { compress::quantized_allgather(comm, buffer.data(), -1, buffer.data()); });
  ok = throws_invalid(comm, "qwZ null shard", [&] { compress::quantized_allgather(comm, nullptr, 4, buffer.data()); }) && ok;
  return throws_invalid(comm, "qwZ block 2^24 + 1", [&] {
    compress::quantized_allgather(comm, buffer.data(), 4, buffer.data(), {.block = compress::kMaxBlock + 1});
  }) && ok;
}

bool qgz_refusals(Communicator& comm) {
  bool ok = throws_invalid(comm, "zero_codec with zero_stage 0", [&] {
    GradSync s(comm, {.zero_codec = {.id = compress::CodecId::kInt8}});
  });
  return throws_invalid(comm, "zero_codec topk", [&] {
    GradSync s(comm, {.rebuild_buckets = false, .zero_stage = 1, .zero_codec = compress::parse_codec_spec("topk:0.1")});
  }) && ok;
}

}  // namespace

int scenario_zero_pp(Communicator& comm, const Args& args) {
  const bool over_tcp = !args.empty() && args[0] == "tcp";
  bool ok = quantized_allgathers(comm, over_tcp);
  for (int stage : {1, 2}) ok = qgz_steps(comm, stage, false, over_tcp) && ok;
  ok = qgz_steps(comm, 2, true, over_tcp) && ok;
  ok = qwz_refusals(comm) && qgz_refusals(comm) && ok;
  if (!ok) return 1;
  RANK_SAY("PASS zero_pp");
  return 0;
}

}  // namespace braid::testing
