// Throughput of the sum kernel of every kernel table this CPU can run, per dtype, on buffers
// that fit L1 (4 KiB), L2 (256 KiB) and none of the caches (16 MiB). "bytes_per_second" counts
// the bytes of one operand per call (the buffer size), as a collective's reduce step sees it;
// the memory traffic is three times that (read dst and src, write dst).
//
//   ./build/bin/braid-reduce-kernels-bench --benchmark_filter='f32|f16|bf16' --benchmark_repetitions=5
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "braid/base/dtype.h"
#include "braid/base/half.h"
#include "braid/base/reduce_kernels.h"

namespace {

using braid::DType;
namespace kernels = braid::kernels;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::uint8_t[], FreeDeleter>;

// Cache-line aligned and written once before timing, so no timed call pays a first-touch fault.
Buffer make_buffer(std::size_t bytes) {
  return Buffer(static_cast<std::uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
}

// Ordinary values: repeated sums stay finite and never become subnormal (which would time
// microcode assists, not the kernel).
void fill(std::uint8_t* data, std::size_t count, DType dtype, float value) {
  for (std::size_t i = 0; i < count; ++i) {
    float v = (i % 2 == 0) ? value : -value;
    switch (dtype) {
      case DType::kF32: std::memcpy(data + i * 4, &v, 4); break;
      case DType::kF64: { double d = v; std::memcpy(data + i * 8, &d, 8); break; }
      case DType::kF16: { std::uint16_t h = braid::float_to_half(v); std::memcpy(data + i * 2, &h, 2); break; }
      case DType::kBF16: { std::uint16_t h = braid::float_to_bf16(v); std::memcpy(data + i * 2, &h, 2); break; }
      case DType::kI32: { auto x = static_cast<std::int32_t>(i); std::memcpy(data + i * 4, &x, 4); break; }
      case DType::kI64: { auto x = static_cast<std::int64_t>(i); std::memcpy(data + i * 8, &x, 8); break; }
      case DType::kU8: data[i] = static_cast<std::uint8_t>(i); break;
    }
  }
}

void bm_sum(benchmark::State& state, kernels::Isa isa, DType dtype) {
  auto bytes = static_cast<std::size_t>(state.range(0));
  std::size_t count = bytes / braid::dtype_size(dtype);
  Buffer dst = make_buffer(bytes), src = make_buffer(bytes);
  fill(dst.get(), count, dtype, 1.0f);
  fill(src.get(), count, dtype, 1.0f / 1024);
  kernels::ReduceFn sum = kernels::lookup(kernels::kernels_for(isa), dtype, braid::ReduceOp::kSum);
  for (auto _ : state) {
    sum(dst.get(), src.get(), count);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}

void register_all() {
  for (int raw = 0; raw < braid::kNumDTypes; ++raw) {
    auto dtype = static_cast<DType>(raw);
    for (kernels::Isa isa : kernels::kAllIsas) {
      if (!kernels::cpu_supports(isa)) continue;  // a path this CPU lacks is not faked
      std::string name = fmt::format("sum/{}/{}", braid::dtype_name(dtype), kernels::isa_name(isa));
      benchmark::RegisterBenchmark(name.c_str(), bm_sum, isa, dtype)->Arg(4 << 10)->Arg(256 << 10)->Arg(16 << 20);
    }
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
