#include "overlap_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "bench_options.h"
#include "braid/base/byte_size.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/engine/grad_sync.h"
#include "result_table.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Backward's stand-in: `units` rounds of 256 multiply-adds over a 1 KiB buffer that stays in L1,
// so it costs CPU time, not memory bandwidth (the communication needs that).
class ComputeLoop {
 public:
  void run(std::int64_t units) {
    for (std::int64_t u = 0; u < units; ++u) {
      for (float& x : buffer_) x = x * 0.9999f + 1e-7f;
    }
    sink_ += buffer_[0];
  }
  // Units per millisecond on this core: timed over ~50 ms.
  double calibrate() {
    std::int64_t units = 0;
    auto start = Clock::now();
    while (ms_since(start) < 50) {
      run(1000);
      units += 1000;
    }
    return static_cast<double>(units) / ms_since(start);
  }
  float sink() const { return sink_; }

 private:
  std::vector<float> buffer_ = std::vector<float>(256, 1.0f);
  float sink_ = 0;
};

struct StepFigures {
  double step_ms = 0, compute_ms = 0, comm_ms = 0, exposed_ms = 0, wire_bytes = 0;
};

struct Config {
  std::string bucket;
  compress::CodecSpec codec;
  bool overlap = true;
};

class SyntheticModel {
 public:
  SyntheticModel(int layers, std::int64_t params) : grads_(static_cast<std::size_t>(layers)) {
    for (auto& g : grads_) g.assign(static_cast<std::size_t>(params), 0.0f);
  }
  void register_with(GradSync& sync) {
    for (std::size_t l = 0; l < grads_.size(); ++l) {
      sync.add_param(fmt::format("layer{}.weight", l), grads_[l].data(), static_cast<std::int64_t>(grads_[l].size()),
                     DType::kF32);
    }
  }
  // One training step's backward (last layer first) and gradient synchronisation.
  StepFigures step(GradSync& sync, ComputeLoop& loop, std::int64_t units_per_layer, bool overlap, int step) {
    StepFigures f;
    auto start = Clock::now();
    for (int l = static_cast<int>(grads_.size()) - 1; l >= 0; --l) {
      loop.run(units_per_layer);
      auto& g = grads_[static_cast<std::size_t>(l)];
      std::fill(g.begin(), g.end(), 1e-3f * static_cast<float>((step + l) % 7 + 1));
      if (overlap) sync.mark_ready(l);
    }
    f.compute_ms = ms_since(start);
    if (!overlap) {
      for (int l = static_cast<int>(grads_.size()) - 1; l >= 0; --l) sync.mark_ready(l);
    }
    GradSyncStats stats = sync.finish();
    f.step_ms = ms_since(start);
    f.comm_ms = stats.communication_seconds * 1e3;
    f.exposed_ms = stats.exposed_seconds * 1e3;
    f.wire_bytes = static_cast<double>(stats.wire.wire_bytes);
    return f;
  }

 private:
  std::vector<std::vector<float>> grads_;
};

// Median over steps of each figure, each step taken at its slowest rank.
StepFigures slowest_median(Communicator& comm, const std::vector<StepFigures>& steps) {
  std::vector<double> flat;
  for (const auto& s : steps) flat.insert(flat.end(), {s.step_ms, s.compute_ms, s.comm_ms, s.exposed_ms, s.wire_bytes});
  allreduce(comm, flat.data(), flat.data(), static_cast<std::int64_t>(flat.size()), DType::kF64, ReduceOp::kMax,
            {.algorithm = "recursive_doubling"});
  auto median = [&](std::size_t column) {
    std::vector<double> v;
    for (std::size_t i = column; i < flat.size(); i += 5) v.push_back(flat[i]);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(0), median(1), median(2), median(3), median(4)};
}

StepFigures run_config(Communicator& comm, SyntheticModel& model, const Config& c, const OverlapOptions& o,
                       std::int64_t units_per_layer) {
  GradSync sync(comm, {.bucket_cap = c.bucket,
                       .policy = compress::CompressionPolicy({.codec = c.codec, .min_elements = 0}),
                       .registered_buckets = o.registered_buckets});
  model.register_with(sync);
  ComputeLoop loop;
  for (int s = 0; s < 2; ++s) model.step(sync, loop, units_per_layer, c.overlap, s);  // first step rebuilds buckets
  std::vector<StepFigures> steps;
  for (int s = 0; s < o.steps; ++s) steps.push_back(model.step(sync, loop, units_per_layer, c.overlap, s + 2));
  return slowest_median(comm, steps);
}

// Compute units per layer: from --compute-ms, or so that communication (measured by one
// configuration without compute and without overlap) is comm_share of compute.
std::int64_t units_per_layer(Communicator& comm, SyntheticModel& model, const OverlapOptions& o, ResultTable& table) {
  // Every rank calibrates at once, so ranks sharing cores measure the speed they will get; the
  // slowest rank's rate sets everyone's work.
  comm.barrier();
  double per_ms = ComputeLoop().calibrate();
  allreduce(comm, &per_ms, &per_ms, 1, DType::kF64, ReduceOp::kMin, {.algorithm = "recursive_doubling"});
  double compute_ms = o.compute_ms;
  if (compute_ms <= 0) {
    StepFigures bare = run_config(comm, model, {.bucket = "25", .codec = {}, .overlap = false}, o, 0);
    compute_ms = bare.comm_ms / o.comm_share;
    if (comm.rank() == 0) {
      table.print_comment(fmt::format("calibration: uncompressed communication {:.1f} ms per step (25 MiB buckets, "
                                      "no compute); backward compute set to {:.1f} ms (communication = {:.0f}% of it)",
                                      bare.comm_ms, compute_ms, o.comm_share * 100));
    }
  }
  table.set_meta("compute_ms", compute_ms);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(compute_ms * per_ms / o.layers));
}

}  // namespace

void add_overlap_flags(CLI::App& app, OverlapOptions& o) {
  app.add_option("--layers", o.layers, "layers of the synthetic model (default 16)")->check(CLI::PositiveNumber);
  app.add_option("--params", o.params_per_layer, "fp32 parameters per layer, K/M suffixes (default 1M)");
  app.add_option("--buckets", o.buckets, "bucket caps to compare, MiB or auto (default 1,4,25,auto)");
  app.add_option("--compress", o.codecs, "codecs to compare (default none), e.g. none,int8,topk:0.01");
  app.add_option("--overlap", o.overlap, "off, on or off,on (default off,on)");
  app.add_option_function<std::string>(
         "--registered-buckets", [&o](const std::string& v) { o.registered_buckets = v == "on"; },
         "on (default): buckets in registered memory, the zero-copy allreduce on one host; off: ordinary memory")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--steps", o.steps, "timed steps per configuration, median reported (default 7)")
      ->check(CLI::PositiveNumber);
  app.add_option("--compute-ms", o.compute_ms, "backward compute per step in ms (default: calibrated)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--comm-share", o.comm_share, "communication / compute when calibrating (default 0.6)")
      ->check(CLI::Range(0.01, 100.0));
  app.add_option("--json", o.json_path, "also write the rows as JSON to this file");
}

namespace {

// --params as a count (the size parser's units, 1M = 2^20 floats). The limit keeps
// layers * params * 4 bytes inside int64 for any --layers an int holds.
std::int64_t params_per_layer(const OverlapOptions& o) {
  constexpr std::uint64_t kMaxParams = std::uint64_t{1} << 30;
  const std::uint64_t params = parse_byte_size(o.params_per_layer, "--params", {.zero = false});
  if (params > kMaxParams) {
    throw InvalidArgument({.op = "braid-bench overlap"},
                          fmt::format("--params {} is more than 2^30 (1G) parameters per layer", o.params_per_layer));
  }
  return static_cast<std::int64_t>(params);
}

}  // namespace

void check_overlap_options(const OverlapOptions& o) {
  (void)params_per_layer(o);
  for (const auto& codec : split_list(o.codecs)) (void)compress::parse_codec_spec(codec);
  for (const auto& bucket : split_list(o.buckets)) (void)engine::parse_bucket_cap(bucket, 1, 1);
  for (const auto& mode : split_list(o.overlap)) {
    if (mode != "on" && mode != "off") {
      throw InvalidArgument({.op = "braid-bench overlap"}, fmt::format("--overlap '{}': use on, off or off,on", mode));
    }
  }
}

int run_overlap_bench(Communicator& comm, const OverlapOptions& o) {
  const std::int64_t params = params_per_layer(o);
  SyntheticModel model(o.layers, params);
  ResultTable table("overlap", {{"bucket", 7}, {"codec", 10}, {"overlap", 8}, {"step(ms)", 10, 1},
                                {"compute(ms)", 12, 1}, {"comm(ms)", 10, 1}, {"exposed(ms)", 12, 1},
                                {"hidden(%)", 10, 1}, {"wire(MB)", 10, 2}});
  table.set_meta("ranks", comm.size());
  table.set_meta("layers", o.layers);
  table.set_meta("params_per_layer", params);
  if (comm.rank() == 0) {
    table.print_comment(fmt::format("braid-bench overlap: {} ranks, {} layers x {} fp32 parameters ({:.1f} MiB of "
                                    "gradients), median of {} steps at the slowest rank",
                                    comm.size(), o.layers, params, o.layers * params * 4.0 / (1 << 20), o.steps));
  }
  std::int64_t units = units_per_layer(comm, model, o, table);
  if (comm.rank() == 0) table.print_header();
  for (const auto& bucket : split_list(o.buckets)) {
    for (const auto& codec : split_list(o.codecs)) {
      for (const auto& mode : split_list(o.overlap)) {
        Config c{bucket, compress::parse_codec_spec(codec), mode == "on"};
        StepFigures f = run_config(comm, model, c, o, units);
        double hidden = f.comm_ms <= 0 ? 0.0 : std::clamp(100.0 * (1.0 - f.exposed_ms / f.comm_ms), 0.0, 100.0);
        if (comm.rank() == 0) {
          table.add_row({bucket, codec, mode, f.step_ms, f.compute_ms, f.comm_ms, f.exposed_ms, hidden,
                         f.wire_bytes / 1e6});
        }
      }
    }
  }
  if (comm.rank() == 0 && !o.json_path.empty()) table.write_json(o.json_path);
  return 0;
}

}  // namespace braid::bench
