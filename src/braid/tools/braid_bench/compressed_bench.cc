#include "compressed_bench.h"

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_allreduce.h"
#include "collective_timing.h"
#include "memcpy_probe.h"
#include "result_table.h"

namespace braid::bench {

namespace {

using compress::CodecSpec;

}  // namespace

std::vector<CodecSpec> compressed_codecs(const std::string& list) {
  std::vector<CodecSpec> codecs;
  for (const std::string& item : split_list(list)) codecs.push_back(compress::parse_codec_spec(item));
  if (codecs.empty()) throw InvalidArgument({.op = "braid-bench"}, "--compress needs at least one codec");
  return codecs;
}

namespace {

void fill_gradient(std::span<float> x, int rank) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    // The first draw of a SplitMix64 seeded per (rank, element): a value in [-1, 1).
    double unit = SplitMix64((static_cast<std::uint64_t>(rank) << 40) + i).next_unit() * 2.0 - 1.0;
    x[i] = static_cast<float>(std::ldexp(unit, static_cast<int>((i / 4096) % 8) - 4));
  }
}

compress::Shape matrix_shape(std::int64_t count) {
  auto rows = static_cast<std::int64_t>(std::sqrt(static_cast<double>(count)));
  while (rows > 1 && count % rows != 0) --rows;
  return {rows, count / std::max<std::int64_t>(rows, 1)};
}

// ||result - exact||_2 / ||exact||_2 with exact = braid's fp32 allreduce (avg) of the input.
double relative_error(Communicator& comm, const CodecSpec& codec, std::span<const float> input, compress::Shape shape) {
  std::vector<float> exact(input.begin(), input.end()), result(input.begin(), input.end());
  allreduce(comm, exact.data(), exact.data(), static_cast<std::int64_t>(exact.size()), DType::kF32, ReduceOp::kAvg);
  compress::CompressionState fresh;
  compress::compressed_allreduce(comm, result, fresh, {.codec = codec, .shape = shape});
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    diff += (static_cast<double>(result[i]) - exact[i]) * (static_cast<double>(result[i]) - exact[i]);
    norm += static_cast<double>(exact[i]) * exact[i];
  }
  return norm == 0 ? 0.0 : std::sqrt(diff / norm);
}

double mean_over_ranks(Communicator& comm, double mine) {
  allreduce(comm, &mine, &mine, 1, DType::kF64, ReduceOp::kAvg, {.algorithm = "recursive_doubling"});
  return mine;
}

ResultTable make_table(Communicator& comm, const SweepOptions& options, double memcpy_gbs) {
  ResultTable table("allreduce-compressed",
                    {{"size", 12}, {"count", 11}, {"codec", 14}, {"time(us)", 11, 1}, {"algbw(GB/s)", 12, 2},
                     {"wire(B)", 12}, {"wire/ring", 10, 4}, {"ratio", 8, 1}, {"relerr", 10, 6}});
  table.set_meta("ranks", comm.size());
  table.set_meta("codecs", options.compress);
  table.set_meta("memcpy_gbs", memcpy_gbs);
  if (comm.rank() == 0) {
    table.print_comment(fmt::format("braid-bench allreduce --compress {}: {} ranks, average, error feedback per codec "
                                    "default",
                                    options.compress, comm.size()));
    table.print_comment(one_thread_memcpy_line(memcpy_gbs));
    table.print_comment("algbw on the uncompressed fp32 size; wire = bytes one rank sent (mean over ranks); "
                        "wire/ring = its fraction of an fp32 ring allreduce's; relerr = L2 error of one call vs exact");
    table.print_header();
  }
  return table;
}

}  // namespace

int run_compressed_bench(Communicator& comm, const SweepOptions& options) {
  std::vector<CodecSpec> codecs = compressed_codecs(options.compress);
  double memcpy_gbs = comm.rank() == 0 ? measure_memcpy_gbs() : 0;
  comm.barrier();
  ResultTable table = make_table(comm, options, memcpy_gbs);
  std::vector<std::uint64_t> sizes = size_sweep(options, sizeof(float));
  std::vector<float> input(sizes.empty() ? 0 : sizes.back() / sizeof(float)), data(input.size());
  fill_gradient(input, comm.rank());
  for (const CodecSpec& codec : codecs) {
    for (std::uint64_t bytes : sizes) {
      auto count = static_cast<std::int64_t>(bytes / sizeof(float));
      std::span<float> buffer(data.data(), static_cast<std::size_t>(count));
      std::copy_n(input.begin(), count, buffer.begin());
      compress::Shape shape = codec.id == compress::CodecId::kPowerSgd ? matrix_shape(count) : compress::Shape{};
      compress::CompressionState state;
      compress::CompressedAllreduceOptions call{.codec = codec, .shape = shape};
      compress::CompressionStats stats;
      auto run = [&] {
        stats = compress::compressed_allreduce(comm, buffer, state, call);
        ++call.step;
      };
      const int iters = options.iters.value_or(default_iters(bytes, 64u << 20));
      for (int i = 0; i < options.warmup.value_or(std::max(1, iters / 5)); ++i) run();
      double seconds = time_batches(comm, run, iters, options.repeats);
      double wire = mean_over_ranks(comm, static_cast<double>(stats.wire_bytes));
      double fraction = mean_over_ranks(comm, stats.wire_fraction());
      double error = options.check ? relative_error(comm, codec, std::span(input).first(buffer.size()), shape) : 0.0;
      if (comm.rank() == 0) {
        table.add_row({static_cast<std::int64_t>(bytes), count, compress::to_string(codec), seconds * 1e6,
                       static_cast<double>(bytes) / seconds / 1e9, static_cast<std::int64_t>(std::llround(wire)),
                       fraction, stats.compression_ratio(), error});
      }
    }
  }
  if (comm.rank() == 0) {
    if (!options.json_path.empty()) table.write_json(options.json_path);
    if (!options.csv_path.empty()) table.write_csv(options.csv_path);
  }
  return 0;
}

}  // namespace braid::bench
