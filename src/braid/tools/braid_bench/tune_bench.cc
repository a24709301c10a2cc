#include "tune_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <fmt/format.h>

#include "algorithm_sweep.h"
#include "braid/base/error.h"
#include "busbw_plot.h"
#include "memcpy_probe.h"
#include "tuning_output.h"

namespace braid::bench {

namespace {

// Only rank 0 draws, but every rank must stop when it cannot: the answer is shared.
void require_gnuplot(Communicator& comm) {
  std::int32_t available = comm.rank() == 0 ? static_cast<std::int32_t>(gnuplot_available()) : 1;
  std::int32_t everywhere = 0;
  allreduce(comm, &available, &everywhere, 1, DType::kI32, ReduceOp::kMin, {.algorithm = "recursive_doubling"});
  if (everywhere == 0) throw InvalidArgument({.rank = comm.rank(), .op = "braid-bench"}, gnuplot_missing_message());
}

// Rank 0 writes the outputs after a sweep that may take minutes: a path whose directory
// cannot be written fails at once instead, on every rank.
void require_writable(Communicator& comm, const std::vector<std::string>& paths) {
  std::string problem;
  for (const std::string& path : paths) {
    if (comm.rank() != 0 || path.empty() || !problem.empty()) continue;
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    if (::access(dir.c_str(), W_OK) != 0) {
      problem = fmt::format("cannot write '{}': directory '{}' does not exist or is not writable", path, dir);
    }
  }
  std::int32_t ok = problem.empty() ? 1 : 0;
  std::int32_t everywhere = 0;
  allreduce(comm, &ok, &everywhere, 1, DType::kI32, ReduceOp::kMin, {.algorithm = "recursive_doubling"});
  if (everywhere == 0) {
    throw InvalidArgument({.rank = comm.rank(), .op = "braid-bench"},
                          problem.empty() ? "rank 0 cannot write its output (see its message)" : problem);
  }
}

// The memcpy reference, measured by rank 0 while the others wait.
double measure_memcpy(Communicator& comm) {
  double gbs = comm.rank() == 0 ? measure_memcpy_gbs() : 0;
  comm.barrier();
  return gbs;
}

void print_run_header(Communicator& comm, const std::string& what, const SweepOptions& options, double memcpy_gbs) {
  if (comm.rank() != 0) return;
  std::printf("# braid-bench %s: %d ranks on %d host(s), %s, out-of-place\n", what.c_str(), comm.size(),
              comm.topology().num_hosts(), options.dtype_name.c_str());
  std::printf("# %s\n", one_thread_memcpy_line(memcpy_gbs).c_str());
  std::printf("# time(us) = slowest rank, median of %d batches; '-' = the algorithm refuses these arguments\n",
              options.repeats);
  std::fflush(stdout);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

int run_algorithm_bench(Communicator& comm, const CollectiveSpec& spec, const SweepOptions& options) {
  require_writable(comm, {options.tune_path, options.plot_path});
  if (!options.plot_path.empty()) require_gnuplot(comm);
  const std::vector<std::string> algorithms = algorithms_to_sweep(spec.op, options.algorithm);
  const double memcpy_gbs = measure_memcpy(comm);
  print_run_header(comm, fmt::format("{} ({})", spec.name(), join(algorithms)), options, memcpy_gbs);
  const AlgorithmSweep sweep = run_algorithm_sweep(comm, spec, options, algorithms);
  if (comm.rank() == 0) {
    if (!options.tune_path.empty()) {
      write_tuning_file(options.tune_path, {sweep}, current_run_facts(comm, memcpy_gbs), options);
    }
    if (!options.plot_path.empty()) {
      PlotLabels labels{.ranks = comm.size(), .dtype = options.dtype_name, .busbw_factor = spec.busbw_factor(comm.size()),
                        .memcpy_gbs = memcpy_gbs};
      draw_busbw_plot(sweep, labels, options.plot_path);
      std::printf("# plot: %s (data and gnuplot script beside it)\n", options.plot_path.c_str());
      std::fflush(stdout);
    }
  }
  return sweep.wrong == 0 ? 0 : 1;
}

void add_tune_flags(CLI::App& app, TuneOptions& options) {
  app.add_option("-o,--output", options.output, "the tuning file to write (JSON; load it with BRAID_TUNING_FILE)")
      ->required()
      ->type_name("FILE");
  app.add_option("--ops", options.ops,
                 "comma-separated operations to tune (default: every collective braid-bench measures)")
      ->type_name("OP,OP...");
  add_size_flags(app, options.sweep);
  app.add_option("-d,--datatype", options.sweep.dtype_name, "f32, f64, f16, bf16, i32, i64 or u8 (default f32)");
}

std::vector<CollectiveSpec> specs_to_tune(const std::string& ops) {
  std::vector<CollectiveSpec> all = collective_specs();
  if (ops.empty()) return all;
  std::vector<CollectiveSpec> chosen;
  std::stringstream list(ops);
  std::string name;
  std::vector<OpKind> measured;
  for (const CollectiveSpec& s : all) measured.push_back(s.op);
  while (std::getline(list, name, ',')) {
    if (name.empty()) continue;
    const OpKind op = parse_op_kind(name, "--ops", measured);
    auto it = std::find_if(all.begin(), all.end(), [&](const CollectiveSpec& s) { return s.op == op; });
    bool seen = std::any_of(chosen.begin(), chosen.end(), [&](const CollectiveSpec& s) { return s.op == op; });
    if (!seen) chosen.push_back(*it);
  }
  return chosen;
}

int run_tune(Communicator& comm, const TuneOptions& options) {
  const std::vector<CollectiveSpec> specs = specs_to_tune(options.ops);
  require_writable(comm, {options.output});
  const double memcpy_gbs = measure_memcpy(comm);
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name());
  print_run_header(comm, "tune " + join(names), options.sweep, memcpy_gbs);
  std::vector<AlgorithmSweep> sweeps;
  std::int64_t wrong = 0;
  for (const CollectiveSpec& spec : specs) {
    sweeps.push_back(run_algorithm_sweep(comm, spec, options.sweep, algorithms_to_sweep(spec.op, "")));
    wrong += sweeps.back().wrong;
  }
  if (comm.rank() == 0) write_tuning_file(options.output, sweeps, current_run_facts(comm, memcpy_gbs), options.sweep);
  return wrong == 0 ? 0 : 1;
}

}  // namespace braid::bench
