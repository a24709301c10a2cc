// Encode and decode throughput of the dense codecs (none, fp16, bf16, int8, sign) on 64 MiB of
// fp32 gradient-like data, one core, against memcpy of the same 64 MiB in the same run
// (issue 4: encode+decode of fp16, bf16, int8 and sign at >= 25% of memcpy bandwidth).
//
// bytes_per_second always counts the fp32 input (64 MiB per iteration), so every row reads
// as "gradient bytes handled per second". roundtrip/<codec> times encode then decode, the
// issue's figure; its counter vs_memcpy is that throughput over the memcpy bandwidth measured
// at start-up (median of 5 copies), and wire_ratio / rel_error give the payload size over the
// input size and ||x - decode(encode(x))|| / ||x||. All buffers are written once before timing
// (first touch of fresh pages costs more than the codecs, DESIGN.md). The kernel table is the
// process's (BRAID_KERNELS=scalar|avx2 forces one); its name is each row's label.
//
//   ./build/bin/braid-codec-bench                          (all rows, ~30 s)
//   BRAID_KERNELS=scalar ./build/bin/braid-codec-bench --benchmark_filter=roundtrip
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "braid/base/reduce_kernels.h"
#include "braid/base/splitmix64.h"
#include "braid/compress/codec.h"

namespace {

namespace compress = braid::compress;

constexpr std::size_t kCount = std::size_t{16} << 20;  // 64 MiB of fp32
constexpr std::size_t kBytes = kCount * sizeof(float);

// Gradient-like: roughly normal values (sum of four uniforms) whose magnitude changes every
// 4096 elements over six decades, as layers and rows of a real gradient do. Deterministic
// (splitmix64), so every run measures the same bytes.
std::vector<float> make_gradient() {
  std::vector<float> x(kCount);
  braid::SplitMix64 rng(0x9e3779b97f4a7c15ull);
  auto uniform = [&rng] { return static_cast<float>(rng.next() >> 40) * 0x1p-24f; };
  float magnitude = 1.0f;
  for (std::size_t i = 0; i < kCount; ++i) {
    if (i % 4096 == 0) magnitude = std::pow(10.0f, -6.0f * uniform());
    float normalish = (uniform() + uniform() + uniform() + uniform() - 2.0f) * 1.7320508f;
    x[i] = normalish * magnitude;
  }
  return x;
}

// One set of buffers for every row: allocating 64 MiB per benchmark would time page faults.
struct Buffers {
  std::vector<float> input = make_gradient();
  std::vector<float> output = std::vector<float>(kCount, 0.0f);
  std::vector<float> decoded = std::vector<float>(kCount, 0.0f);
  std::vector<std::byte> payload = std::vector<std::byte>(kBytes + 4096, std::byte{0});
};

Buffers& buffers() {
  static Buffers instance;
  return instance;
}

double memcpy_bytes_per_second() {
  static const double rate = [] {
    Buffers& b = buffers();
    std::vector<double> seconds;
    for (int i = 0; i < 5; ++i) {
      auto start = std::chrono::steady_clock::now();
      std::memcpy(b.output.data(), b.input.data(), kBytes);
      benchmark::ClobberMemory();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    return static_cast<double>(kBytes) / seconds[2];
  }();
  return rate;
}

std::size_t encode(const compress::Codec& codec, std::span<float> decoded = {}) {
  Buffers& b = buffers();
  return codec.encode(b.input, {}, {}, b.payload, decoded);
}

void bm_memcpy(benchmark::State& state) {
  Buffers& b = buffers();
  for (auto _ : state) {
    std::memcpy(b.output.data(), b.input.data(), kBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
}

void bm_encode(benchmark::State& state, compress::CodecSpec spec, bool with_decoded) {
  auto codec = compress::make_codec(spec);
  std::span<float> decoded = with_decoded ? std::span<float>(buffers().decoded) : std::span<float>();
  for (auto _ : state) benchmark::DoNotOptimize(encode(*codec, decoded));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  state.SetLabel(std::string(braid::kernels::isa_name(braid::kernels::active_isa())));
}

void bm_decode(benchmark::State& state, compress::CodecSpec spec) {
  auto codec = compress::make_codec(spec);
  Buffers& b = buffers();
  std::span<const std::byte> payload(b.payload.data(), encode(*codec));
  for (auto _ : state) {
    codec->decode(payload, b.output);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  state.SetLabel(std::string(braid::kernels::isa_name(braid::kernels::active_isa())));
}

double relative_error(std::span<const float> x, std::span<const float> y) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    norm += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(diff / norm);
}

void bm_roundtrip(benchmark::State& state, compress::CodecSpec spec) {
  auto codec = compress::make_codec(spec);
  Buffers& b = buffers();
  std::size_t bytes = 0;
  double seconds = 0;  // the loop's own wall time: a ratio is unitless, which no rate counter is
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    bytes = encode(*codec);
    codec->decode(std::span<const std::byte>(b.payload.data(), bytes), b.output);
    benchmark::ClobberMemory();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  double rate = static_cast<double>(state.iterations()) * static_cast<double>(kBytes) / seconds;
  state.counters["vs_memcpy"] = rate / memcpy_bytes_per_second();
  state.counters["wire_ratio"] = static_cast<double>(bytes) / static_cast<double>(kBytes);
  state.counters["rel_error"] = relative_error(b.input, b.output);
  state.SetLabel(std::string(braid::kernels::isa_name(braid::kernels::active_isa())));
}

void register_all() {
  buffers();  // build and fault in the data before any timing
  memcpy_bytes_per_second();
  benchmark::RegisterBenchmark("memcpy/64MiB", bm_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
  for (const char* text : {"none", "fp16", "bf16", "int8", "sign"}) {
    compress::CodecSpec spec = compress::parse_codec_spec(text);
    benchmark::RegisterBenchmark(fmt::format("encode/{}", text).c_str(), bm_encode, spec, false)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(fmt::format("encode_with_decoded/{}", text).c_str(), bm_encode, spec, true)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(fmt::format("decode/{}", text).c_str(), bm_decode, spec)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(fmt::format("roundtrip/{}", text).c_str(), bm_roundtrip, spec)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
