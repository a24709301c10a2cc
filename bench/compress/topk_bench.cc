// braid's top-k selection against std::nth_element selecting the same k (the approach of
// ../shared/seeds/000: np.argpartition(np.abs(x), -k)), plus whole top-k and random-k encodes,
// on 16M gradient-like fp32 values (docs/performance.md, "Compression"; the bar: topk
// at ratio 0.01 at least 5x faster than nth_element).
//
// The baseline is the realistic fast form of argpartition in C++: (|x|, index) pairs in one
// contiguous array (no indirection through an index array) filled and partitioned by
// std::nth_element with a plain magnitude comparator. Its pair buffer, like every buffer here,
// is allocated and touched before timing (first touch of fresh pages costs more than the
// selection on a VM). braid's selection also returns the indices sorted, which the baseline
// does not (the seed sorts them afterwards).
//
// Run: braid-topk-bench (about half a minute); --benchmark_filter=Select for the selections.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include "braid/base/splitmix64.h"
#include "braid/compress/codec.h"
#include "braid/compress/powersgd_math.h"
#include "braid/compress/topk_select.h"

namespace {

using namespace braid::compress;

constexpr std::int64_t kCount = std::int64_t{1} << 24;  // 16M fp32 = 64 MiB

// Standard normal values with a per-4096-element scale drawn log-uniformly from [1e-4, 1e-2]:
// layers' gradients differ by orders of magnitude, which spreads |x| over several binades.
const std::vector<float>& gradient() {
  static const std::vector<float> values = [] {
    std::vector<float> x(kCount);
    fill_standard_normal(2024, x);
    braid::SplitMix64 rng(7);
    for (std::int64_t block = 0; block < kCount; block += 4096) {
      auto scale = static_cast<float>(std::pow(10.0, -4.0 + 2.0 * rng.next_unit()));
      for (std::int64_t i = block; i < block + 4096; ++i) x[i] *= scale;
    }
    return x;
  }();
  return values;
}

std::int64_t k_for(const benchmark::State& state) { return selected_count(state.range(0) / 1000.0, kCount); }

void set_throughput(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * kCount * static_cast<std::int64_t>(sizeof(float)));
  state.counters["k"] = static_cast<double>(k_for(state));
}

void BM_SelectTopk(benchmark::State& state) {
  const auto& x = gradient();
  std::int64_t k = k_for(state);
  std::vector<std::uint32_t> indices(k, 0);
  TopkSelector selector;
  selector.select(x, k, indices);  // grows the scratch once, as in steady-state training
  for (auto _ : state) {
    selector.select(x, k, indices);
    benchmark::DoNotOptimize(indices.data());
  }
  set_throughput(state);
}

struct MagnitudeIndex {
  float magnitude;
  std::uint32_t index;
};

void BM_NthElement(benchmark::State& state) {
  const auto& x = gradient();
  std::int64_t k = k_for(state);
  std::vector<MagnitudeIndex> pairs(x.size(), MagnitudeIndex{0.0f, 0});
  for (auto _ : state) {
    for (std::size_t i = 0; i < x.size(); ++i) pairs[i] = {std::fabs(x[i]), static_cast<std::uint32_t>(i)};
    std::nth_element(pairs.begin(), pairs.begin() + (k - 1), pairs.end(),
                     [](const MagnitudeIndex& a, const MagnitudeIndex& b) { return a.magnitude > b.magnitude; });
    benchmark::DoNotOptimize(pairs.data());
  }
  set_throughput(state);
}

void encode_loop(benchmark::State& state, CodecId id) {
  const auto& x = gradient();
  auto codec = make_codec({.id = id, .ratio = state.range(0) / 1000.0});
  std::vector<std::byte> out(codec->max_encoded_bytes(kCount, {}), std::byte{0});
  std::uint64_t step = 0;
  for (auto _ : state) {
    std::size_t bytes = codec->encode(x, {}, {.seed = ++step}, out);
    benchmark::DoNotOptimize(bytes);
  }
  set_throughput(state);
}

void BM_TopkEncode(benchmark::State& state) { encode_loop(state, CodecId::kTopK); }
void BM_RandomkEncode(benchmark::State& state) { encode_loop(state, CodecId::kRandomK); }

// Ratios in per mille: 0.001, 0.01, 0.1.
BENCHMARK(BM_SelectTopk)->ArgName("permille")->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NthElement)->ArgName("permille")->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopkEncode)->ArgName("permille")->Arg(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RandomkEncode)->ArgName("permille")->Arg(10)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
