// Scenarios `compressed` and `compressed-feedback`: the compressed allreduce of every codec on
// real ranks, checked three ways — bitwise against a one-process simulation of the scheme
// (two-stage codecs, topk), within the codec's error bound against the exact allreduce, and
// bitwise identical across ranks — and error feedback's conservation law over many steps.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/crc32c.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_allreduce.h"
#include "braid/compress/compressed_call.h"
#include "compressed_inputs.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using compress::CodecId;
using compress::CodecSpec;
using compress::CompressedAllreduceOptions;
using compress::CompressionState;
using compress::parse_codec_spec;

// Every rank holds the same bytes: compare CRC32Cs of the result across ranks.
bool identical_on_every_rank(Communicator& comm, std::span<const float> x) {
  std::uint32_t mine = crc32c(x.data(), x.size_bytes());
  std::vector<std::uint32_t> all(static_cast<std::size_t>(comm.size()));
  allgather(comm, &mine, all.data(), 1, DType::kI32);
  return std::all_of(all.begin(), all.end(), [&](std::uint32_t c) { return c == mine; });
}

double max_abs(std::span<const float> x) {
  double m = 0;
  for (float v : x) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// The bound of |result - exact| each codec guarantees (see the codec tests for the per-stage
// bounds): stage 1 rounds every rank's input, stage 2 the reduced shard. `inputs_max` is
// sum over ranks of max|x_r| / divisor; unit roundoff u = 2^-11 (fp16), 2^-8 (bf16); int8
// rounds within scale/2 = max/254 per block, whole-tensor maxima bound the block maxima; sign
// replaces x by +-mean|x|, within max|x| of x. 2^-20 relative covers fp32 summation order.
double error_bound(CodecId id, double inputs_max, double exact_max) {
  double fp32 = 0x1p-20 * inputs_max;
  switch (id) {
    case CodecId::kNone: return fp32;
    case CodecId::kFp16: return 0x1p-11 * inputs_max + 0x1p-11 * (exact_max + 0x1p-11 * inputs_max) * 1.01 + fp32;
    case CodecId::kBf16: return 0x1p-8 * inputs_max + 0x1p-8 * (exact_max + 0x1p-8 * inputs_max) * 1.01 + fp32;
    case CodecId::kInt8: {
      double stage1 = inputs_max / 254;
      return stage1 + (exact_max + stage1) / 254 * 1.01 + fp32;
    }
    case CodecId::kSign: return inputs_max + (exact_max + inputs_max) * 1.01;
    default: return inputs_max;  // sparse codecs drop values: checked against their simulation instead
  }
}

struct Check {
  Communicator& comm;
  std::string what;
  bool ok = true;
  void fail(const std::string& why) {
    ok = false;
    RANK_SAY("FAIL rank %d: %s: %s", comm.rank(), what.c_str(), why.c_str());
  }
};

void check_randomk(Check& c, const CodecSpec& spec, std::span<const float> result, std::span<const float> exact,
                   double inputs_max) {
  auto k = static_cast<std::size_t>(compress::selected_count(spec.ratio, static_cast<std::int64_t>(result.size())));
  double scale = static_cast<double>(result.size()) / static_cast<double>(std::max<std::size_t>(k, 1));
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < result.size(); ++i) {
    if (result[i] == 0.0f) continue;
    ++nonzero;
    if (std::fabs(result[i] - exact[i] * scale) > 0x1p-18 * scale * inputs_max) {
      return c.fail(fmt::format("element {}: {} is not exact {} scaled by N/k = {}", i, result[i], exact[i], scale));
    }
  }
  if (nonzero > k) c.fail(fmt::format("{} non-zero elements, k = {}", nonzero, k));
}

bool run_case(Communicator& comm, const CodecSpec& spec, std::size_t count, bool average, std::uint64_t seed,
              std::optional<bool> host_striped = std::nullopt) {
  const int n = comm.size();
  Check c{comm, fmt::format("{} count {} {}", compress::to_string(spec), count, average ? "avg" : "sum")};
  std::vector<float> data = compressed_input(seed, comm.rank(), count);
  CompressionState state;
  auto stats = compress::compressed_allreduce(comm, data, state,
                                              {.codec = spec, .name = "t", .average = average, .error_feedback = false,
                                               .host_striped = host_striped});
  std::vector<float> exact = exact_allreduce(seed, n, count, average);
  double inputs_max = 0;
  for (int r = 0; r < n; ++r) inputs_max += max_abs(compressed_input(seed, r, count));
  if (average) inputs_max /= n;
  if (!identical_on_every_rank(comm, data)) c.fail("results differ between ranks");
  // The host-striped scheme encodes this rank's shard of the host's sum only.
  const Topology& topology = comm.topology();
  const bool two_stage = spec.id == CodecId::kFp16 || spec.id == CodecId::kBf16 || spec.id == CodecId::kInt8 ||
                         spec.id == CodecId::kSign;
  const bool striped = compress::takes_host_striped(comm, {.codec = spec, .host_striped = host_striped});
  const std::size_t encoded =
      striped ? compress::shard_bounds(count, comm.local_size(), comm.local_rank(), compress::two_stage_shard_align(spec)).size()
              : count;
  if (stats.elements != encoded) c.fail(fmt::format("stats count {} elements, expected {}", stats.elements, encoded));
  if (spec.id == CodecId::kRandomK) {
    check_randomk(c, spec, data, exact, inputs_max);
    return c.ok;
  }
  std::vector<float> expected;
  if (spec.id == CodecId::kTopK) expected = simulate_topk(spec, seed, n, count, average);
  if (striped && comm.local_size() <= 2) {
    expected = simulate_host_striped(spec, seed, topology, count, average);
  } else if (two_stage && !striped) {
    expected = simulate_two_stage(spec, seed, n, count, average);
  }
  if (!expected.empty() && std::memcmp(expected.data(), data.data(), count * sizeof(float)) != 0) {
    std::size_t i = 0;
    while (expected[i] == data[i]) ++i;
    c.fail(fmt::format("element {} is {}, the simulated scheme gives {}", i, data[i], expected[i]));
  }
  // powersgd without a 2-D shape is the dense fp32 allreduce.
  CodecId bound_of = spec.id == CodecId::kPowerSgd ? CodecId::kNone : spec.id;
  double bound = error_bound(bound_of, inputs_max, max_abs(exact));
  for (std::size_t i = 0; i < count && c.ok; ++i) {
    if (!(std::fabs(static_cast<double>(data[i]) - exact[i]) <= bound)) {
      c.fail(fmt::format("element {}: {} vs exact {} (bound {})", i, data[i], exact[i], bound));
    }
  }
  return c.ok;
}

// PowerSGD is exact when the average is rank r: every rank's matrix is A * B_r^T with a shared
// A (rows x r), so the average lies in A's column space, which P = M Q spans.
bool run_powersgd_exactness(Communicator& comm, std::int64_t rows, std::int64_t cols, std::uint32_t r) {
  Check c{comm, fmt::format("powersgd:{} on rank-{} {}x{}", r, r, rows, cols)};
  auto a = compressed_input(11, 0, static_cast<std::size_t>(rows * r));
  auto matrix_of = [&](int rank) {
    auto b = compressed_input(12, rank, static_cast<std::size_t>(cols * r));
    std::vector<float> m(static_cast<std::size_t>(rows * cols), 0.0f);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        for (std::uint32_t q = 0; q < r; ++q) m[i * cols + j] += a[i * r + q] * b[j * r + q];
    return m;
  };
  std::vector<float> data = matrix_of(comm.rank());
  std::vector<double> mean(data.size(), 0.0);
  for (int rank = 0; rank < comm.size(); ++rank) {
    auto m = matrix_of(rank);
    for (std::size_t i = 0; i < m.size(); ++i) mean[i] += m[i] / comm.size();
  }
  CompressionState state;
  compress::compressed_allreduce(comm, data, state,
                                 {.codec = {.id = CodecId::kPowerSgd, .rank = r}, .name = "w", .shape = {rows, cols},
                                  .error_feedback = false});
  double scale = 0;
  for (double v : mean) scale = std::max(scale, std::fabs(v));
  for (std::size_t i = 0; i < data.size() && c.ok; ++i) {
    // Orthonormalisation and two products in fp32: a few hundred ulps of the largest entry.
    if (std::fabs(data[i] - mean[i]) > 1e-4 * scale) c.fail(fmt::format("element {}: {} vs {}", i, data[i], mean[i]));
  }
  if (!identical_on_every_rank(comm, data)) c.fail("results differ between ranks");
  return c.ok;
}

// With BRAID_TEST_EXPECT_WIRE=1 (tcp, ring allgather/allreduce, pairwise alltoallv) the bytes
// the transports carried equal the modelled wire bytes, and the volume goals hold.
bool run_wire_accounting(Communicator& comm) {
  bool ok = true;
  if (std::getenv("BRAID_TEST_EXPECT_WIRE") == nullptr || comm.size() < 2) return ok;
  for (const char* text : {"none", "fp16", "int8", "sign", "topk:0.01", "randomk:0.01"}) {
    CodecSpec spec = parse_codec_spec(text);
    Check c{comm, fmt::format("wire accounting of {}", text)};
    std::vector<float> data = compressed_input(5, comm.rank(), 1 << 20);
    CompressionState state;
    auto stats = compress::compressed_allreduce(comm, data, state, {.codec = spec});
    if (stats.transport_bytes != stats.wire_bytes) {
      c.fail(fmt::format("transports carried {} bytes, the model says {}", stats.transport_bytes, stats.wire_bytes));
    }
    double limit = spec.id == CodecId::kInt8 ? 0.3 : spec.id == CodecId::kSign ? 0.05 : 1.0;
    if (stats.wire_fraction() > limit) c.fail(fmt::format("sent {:.4f} of the fp32 ring's bytes", stats.wire_fraction()));
    RANK_SAY("WIRE %s %llu bytes (%.4f of fp32 ring), ratio %.2f", text,
             static_cast<unsigned long long>(stats.wire_bytes), stats.wire_fraction(), stats.compression_ratio());
    ok = ok && c.ok;
  }
  return ok;
}

}  // namespace

int scenario_compressed(Communicator& comm, const Args&) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  const char* codecs[] = {"none", "fp16", "bf16", "int8", "int8:256", "sign", "sign:64", "topk:0.01", "topk:0.3",
                          "randomk:0.1", "powersgd:2"};
  std::uint64_t seed = 1;
  bool ok = true;
  for (const char* text : codecs) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, n + 1, std::size_t{1000}, std::size_t{100003}}) {
      ok = run_case(comm, parse_codec_spec(text), count, true, seed++) && ok;
    }
    ok = run_case(comm, parse_codec_spec(text), 4099, false, seed++) && ok;
  }
  // sign stays flat by default (BRAID_COMPRESS_HOST_STRIPED=auto); asked for, it stripes too.
  for (std::size_t count : {n + 1, std::size_t{100003}}) {
    ok = run_case(comm, parse_codec_spec("sign"), count, true, seed++, true) && ok;
  }
  ok = run_powersgd_exactness(comm, 48, 40, 2) && ok;
  ok = run_powersgd_exactness(comm, 7, 300, 3) && ok;
  ok = run_wire_accounting(comm) && ok;
  if (!ok) return 1;
  RANK_SAY("PASS compressed");
  return 0;
}

}  // namespace braid::testing
