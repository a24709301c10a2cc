// Options every braid-bench subcommand shares, with the nccl-tests names and meanings:
// -b/-e/-f sweep message sizes from min to max by a factor, -n/--iters and -w/--warmup set
// repetitions, -c checks results, and --json/--csv write machine-readable copies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"

namespace braid::bench {

struct SweepOptions {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 256u << 20;
  double factor = 2;
  std::optional<int> iters;   // default: chosen per size (more for small messages)
  std::optional<int> warmup;
  int repeats = 5;            // timed batches; the median is reported
  bool check = true;
  std::string json_path;
  std::string csv_path;
  std::string dtype_name = "f32";
  std::string op_name = "sum";
  std::string algorithm;      // --algo: empty lets braid choose; with --tune / --plot a list a,b
  std::string tune_path;      // --tune FILE: time every algorithm, write the fastest per size
  std::string plot_path;      // --plot FILE.png: time every algorithm, draw busbw per algorithm
  std::string compress;       // allreduce --compress a,b: time the compressed allreduce of each codec
  bool registered = false;    // --registered: send and recv from alloc_registered (zero-copy path)

  DType dtype() const;
  ReduceOp op() const;
};

// Registers the shared flags on a subcommand; collectives add -d, --algo, --tune and --plot,
// reducing ones -o.
void add_sweep_flags(CLI::App& app, SweepOptions& options, bool collective, bool with_reduction);
// Only the sweep's sizes and repetitions (-b -e -f -n -w --repeats -c), for `braid-bench tune`.
void add_size_flags(CLI::App& app, SweepOptions& options);

// "a,b,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(std::string_view text);

// min, min*f, ..., up to max (max included when the sweep lands on it); a factor of 1 means
// an arithmetic step of min (as nccl-tests' -i). Sizes are rounded down to `multiple_of`.
std::vector<std::uint64_t> size_sweep(const SweepOptions& options, std::uint64_t multiple_of);
// Default repetitions for a message of `bytes`: enough to time small messages precisely
// without spending minutes on 256 MiB ones.
int default_iters(std::uint64_t bytes, std::uint64_t budget_bytes);

}  // namespace braid::bench
