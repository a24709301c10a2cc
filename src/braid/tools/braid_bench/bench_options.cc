#include "bench_options.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/byte_size.h"
#include "braid/base/error.h"

namespace braid::bench {

DType SweepOptions::dtype() const {
  auto parsed = parse_dtype(dtype_name);
  if (!parsed) throw InvalidArgument({.op = "braid-bench"}, fmt::format("unknown dtype '{}' (f32, f64, f16, bf16, i32, i64, u8)", dtype_name));
  return *parsed;
}

ReduceOp SweepOptions::op() const {
  auto parsed = parse_reduce_op(op_name);
  if (!parsed) throw InvalidArgument({.op = "braid-bench"}, fmt::format("unknown op '{}' (sum, avg, min, max, prod)", op_name));
  return *parsed;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    std::string_view item = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), item.size() + 1));
    if (!item.empty()) items.emplace_back(item);
  }
  return items;
}

void add_size_flags(CLI::App& app, SweepOptions& options) {
  // The flag's short name goes into the error ("-b: '17179869184G' is too large ...").
  auto size_flag = [&app](const char* names, const char* flag, std::uint64_t& target, const char* help) {
    app.add_option_function<std::string>(
           names, [flag, &target](const std::string& s) { target = parse_byte_size(s, flag); }, help)
        ->type_name("SIZE");
  };
  size_flag("-b,--minbytes", "-b", options.min_bytes, "smallest message: 8, 64K, 16M, 1G (binary), 1GB (decimal); default 8");
  size_flag("-e,--maxbytes", "-e", options.max_bytes, "largest message (default 256M)");
  app.add_option("-f,--stepfactor", options.factor, "size multiplication factor (default 2)")->check(CLI::Range(1.0, 1e6));
  app.add_option("-n,--iters", options.iters, "timed iterations per size (default: by size)")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup", options.warmup, "untimed iterations per size (default: by size)")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", options.repeats, "timed batches per size; the median is reported (default 5)")
      ->check(CLI::PositiveNumber);
  app.add_option("-c,--check", options.check, "check every result (1) or not (0); default 1");
}

void add_sweep_flags(CLI::App& app, SweepOptions& options, bool collective, bool with_reduction) {
  add_size_flags(app, options);
  app.add_option("--json", options.json_path, "also write the results as JSON to this file");
  app.add_option("--csv", options.csv_path, "also write the results as CSV to this file");
  if (!collective) return;
  app.add_option("-d,--datatype", options.dtype_name, "f32, f64, f16, bf16, i32, i64 or u8 (default f32)");
  app.add_flag("--registered", options.registered,
               "send and recv buffers in registered memory (alloc_registered): the zero-copy shared-memory path");
  app.add_option("--algo", options.algorithm,
                 "algorithm to run (default: braid's choice); with --tune or --plot, the comma-separated "
                 "algorithms to compare (default: all)");
  app.add_option("--tune", options.tune_path,
                 "time every algorithm at every size and write the fastest per size range to this tuning file "
                 "(JSON; load it with BRAID_TUNING_FILE)")
      ->type_name("FILE");
  app.add_option("--plot", options.plot_path,
                 "time every algorithm at every size and draw busbw against size, one line per algorithm and the "
                 "memcpy bandwidth as reference, into this PNG (needs gnuplot; FILE.dat and FILE.gp are kept beside it)")
      ->type_name("FILE.png");

  if (with_reduction) app.add_option("-o,--op", options.op_name, "sum, avg, min, max or prod (default sum)");
  if (app.get_name() == "allreduce") {
  app.add_option("--compress", options.compress,
                 "compressed allreduce (fp32, average) through these comma-separated codecs instead: none, fp16, "
                 "bf16, int8[:block], sign[:block], topk:RATIO, randomk:RATIO, powersgd:RANK; prints time, algbw on "
                 "the uncompressed size, bytes on the wire and the relative error against the exact allreduce")
      ->type_name("CODECS");
  }
}

std::vector<std::uint64_t> size_sweep(const SweepOptions& options, std::uint64_t multiple_of) {
  if (options.min_bytes > options.max_bytes) {
    throw InvalidArgument({.op = "braid-bench"}, fmt::format("-b {} is larger than -e {}", options.min_bytes, options.max_bytes));
  }
  std::vector<std::uint64_t> sizes;
  double size = static_cast<double>(options.min_bytes);
  while (size <= static_cast<double>(options.max_bytes) + 0.5) {
    auto bytes = static_cast<std::uint64_t>(size) / multiple_of * multiple_of;
    if (sizes.empty() || bytes != sizes.back()) sizes.push_back(bytes);
    double next = options.factor == 1 ? size + static_cast<double>(std::max<std::uint64_t>(options.min_bytes, 1))
                                      : size * options.factor;
    if (next <= size) break;
    size = next;
  }
  return sizes;
}

int default_iters(std::uint64_t bytes, std::uint64_t budget_bytes) {
  std::uint64_t iters = budget_bytes / std::max<std::uint64_t>(bytes, 1);
  return static_cast<int>(std::clamp<std::uint64_t>(iters, 5, 1000));
}

}  // namespace braid::bench
