#include "algorithm_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"
#include "collective_timing.h"
#include "result_table.h"

namespace braid::bench {

namespace {

constexpr double kNotRun = std::numeric_limits<double>::quiet_NaN();

std::string names_of(OpKind op) {
  std::string names;
  for (const AlgorithmEntry* entry : algorithms_for(op)) names += fmt::format("{}{}", names.empty() ? "" : ", ", entry->name);
  return names;
}

// Whether `entry` accepts this call; the same test the entry point makes before running it.
bool supports(const AlgorithmEntry& entry, const CollectiveSpec& spec, const CollectiveCall& call) {
  if (entry.supports == nullptr) return true;
  CollectiveArgs args{.comm = call.comm, .op = spec.op, .seq = 0, .send = static_cast<const std::byte*>(call.send),
                      .recv = static_cast<std::byte*>(call.recv), .count = call.count, .dtype = call.dtype,
                      .reduce_op = call.op};
  return entry.supports(args);
}

ResultTable make_table(const AlgorithmSweep& sweep, const SweepOptions& options, int ranks) {
  std::vector<Column> columns{{"size", 12}, {"count", 11}};
  for (const std::string& name : sweep.algorithms) {
    columns.push_back({name + "(us)", std::max(12, static_cast<int>(name.size()) + 5), 1});
  }
  columns.push_back({"winner", 20});
  ResultTable table(sweep.name + " algorithms", std::move(columns));
  table.set_meta("ranks", ranks);
  table.set_meta("dtype", options.dtype_name);
  return table;
}

void print_progress(const AlgorithmSweep& sweep, std::size_t size_index, std::size_t algorithm_index) {
  std::fprintf(stderr, "braid-bench: %s size %zu/%zu (%llu bytes): %s (%zu/%zu)\n", sweep.name.c_str(), size_index + 1,
               sweep.bytes.size(), static_cast<unsigned long long>(sweep.bytes[size_index]),
               sweep.algorithms[algorithm_index].c_str(), algorithm_index + 1, sweep.algorithms.size());
  std::fflush(stderr);
}

std::string winner_at(const AlgorithmSweep& sweep, std::size_t s) {
  std::string best;
  double best_seconds = 0;
  for (std::size_t a = 0; a < sweep.algorithms.size(); ++a) {
    const double seconds = sweep.seconds[a][s];
    if (!std::isnan(seconds) && (best.empty() || seconds < best_seconds)) {
      best = sweep.algorithms[a];
      best_seconds = seconds;
    }
  }
  return best;
}

std::vector<Cell> row_of(const AlgorithmSweep& sweep, std::size_t s) {
  std::vector<Cell> row{static_cast<std::int64_t>(sweep.bytes[s]), sweep.counts[s]};
  for (const auto& per_size : sweep.seconds) {
    if (std::isnan(per_size[s])) {
      row.emplace_back(std::string("-"));
    } else {
      row.emplace_back(per_size[s] * 1e6);
    }
  }
  std::string winner = winner_at(sweep, s);
  row.emplace_back(winner.empty() ? std::string("-") : winner);
  return row;
}

}  // namespace

std::vector<SizeWinner> AlgorithmSweep::winners() const {
  std::vector<SizeWinner> out;
  for (std::size_t s = 0; s < bytes.size(); ++s) out.push_back({bytes[s], winner_at(*this, s)});
  return out;
}

std::vector<std::string> algorithms_to_sweep(OpKind op, const std::string& requested) {
  std::vector<std::string> names;
  if (requested.empty()) {
    for (const AlgorithmEntry* entry : algorithms_for(op)) names.emplace_back(entry->name);
    return names;
  }
  std::stringstream list(requested);
  std::string name;
  while (std::getline(list, name, ',')) {
    if (name.empty()) continue;
    if (find_algorithm(op, name) == nullptr) {
      throw InvalidArgument({.op = "braid-bench"}, fmt::format("unknown {} algorithm '{}' (available: {})",
                                                               op_kind_name(op), name, names_of(op)));
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

AlgorithmSweep run_algorithm_sweep(Communicator& comm, const CollectiveSpec& spec, const SweepOptions& options,
                                   const std::vector<std::string>& algorithms) {
  const DType dtype = options.dtype();
  const ReduceOp op = options.op();
  const std::size_t elem = dtype_size(dtype);
  const int n = comm.size();
  AlgorithmSweep sweep{.name = spec.name(), .op = spec.op, .algorithms = algorithms};
  const std::vector<std::uint64_t> sizes = size_sweep(options, elem);
  for (std::uint64_t requested : sizes) {
    sweep.counts.push_back(spec.count_for(requested, n, elem));
    sweep.bytes.push_back(spec.size_of(sweep.counts.back(), n, elem));
  }
  sweep.seconds.assign(algorithms.size(), std::vector<double>(sizes.size(), kNotRun));
  SweepBuffers buffers(comm, spec, sizes, dtype, op);
  ResultTable table = make_table(sweep, options, n);
  if (comm.rank() == 0) table.print_header();

  for (std::size_t s = 0; s < sizes.size(); ++s) {
    for (std::size_t a = 0; a < algorithms.size(); ++a) {
      const AlgorithmEntry* entry = find_algorithm(spec.op, algorithms[a]);
      CollectiveOptions collective_options{.algorithm = algorithms[a]};
      CollectiveCall call{comm, buffers.send(), buffers.recv(), sweep.counts[s], dtype, op, collective_options};
      if (entry == nullptr || !supports(*entry, spec, call)) continue;
      if (comm.rank() == 0) print_progress(sweep, s, a);
      Timing timing = time_collective(spec, call, sweep.bytes[s], options);
      sweep.wrong += timing.wrong;
      if (timing.wrong == 0) sweep.seconds[a][s] = timing.seconds;  // a wrong result never wins
    }
    if (comm.rank() == 0) table.add_row(row_of(sweep, s));
  }
  if (comm.rank() == 0) {
    if (sweep.wrong != 0) table.print_comment(fmt::format("{} wrong elements: those runs are left out", sweep.wrong));
    if (!options.json_path.empty()) table.write_json(options.json_path);
    if (!options.csv_path.empty()) table.write_csv(options.csv_path);
  }
  return sweep;
}

}  // namespace braid::bench
