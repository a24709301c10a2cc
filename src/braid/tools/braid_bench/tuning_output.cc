#include "tuning_output.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "braid/base/error.h"
#include "braid/collectives/tuning_file.h"

namespace braid::bench {

namespace {

using nlohmann::json;

json measurements_of(const AlgorithmSweep& sweep) {
  json seconds = json::object();
  for (std::size_t a = 0; a < sweep.algorithms.size(); ++a) {
    json times = json::array();
    for (double t : sweep.seconds[a]) times.push_back(std::isnan(t) ? json(nullptr) : json(t));  // null: not run
    seconds[sweep.algorithms[a]] = std::move(times);
  }
  json winners = json::array();
  for (const SizeWinner& w : sweep.winners()) winners.push_back(w.algorithm.empty() ? json(nullptr) : json(w.algorithm));
  return {{"bytes", sweep.bytes}, {"counts", sweep.counts}, {"seconds", seconds}, {"winner", winners}};
}

json metadata_of(const std::vector<AlgorithmSweep>& sweeps, const TuningRunFacts& facts, const SweepOptions& options) {
  json measurements = json::object();
  for (const AlgorithmSweep& sweep : sweeps) measurements[sweep.name] = measurements_of(sweep);
  return {{"tool", "braid-bench"},
          {"date", facts.date},
          {"hostname", facts.hostname},
          {"world", facts.world},
          {"hosts", facts.hosts},
          {"dtype", options.dtype_name},
          {"iters", options.iters ? json(*options.iters) : json("by size")},
          {"warmup", options.warmup ? json(*options.warmup) : json("by size")},
          {"repeats", options.repeats},
          {"memcpy_gbs", facts.memcpy_gbs},
          {"time", "seconds per call of the slowest rank, median of the repeats; null where not run"},
          {"measurements", measurements}};
}

std::string describe_bytes(std::uint64_t bytes) { return bytes == kNoByteLimit ? "inf" : std::to_string(bytes); }

}  // namespace

TuningRunFacts current_run_facts(const Communicator& comm, double memcpy_gbs) {
  TuningRunFacts facts{.world = comm.size(), .hosts = comm.topology().num_hosts(), .memcpy_gbs = memcpy_gbs};
  facts.date = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(
                                                        std::chrono::system_clock::now())));
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) facts.hostname = host;
  return facts;
}

std::string tuning_file_text(const std::vector<AlgorithmSweep>& sweeps, const TuningRunFacts& facts,
                             const SweepOptions& options) {
  TuningTable table;
  for (const AlgorithmSweep& sweep : sweeps) {
    std::vector<SizeWinner> winners = sweep.winners();
    for (TuningRule& rule : rules_from_winners(sweep.op, winners, facts.world, facts.hosts)) {
      table.rules.push_back(std::move(rule));
    }
  }
  return tuning_json(table, metadata_of(sweeps, facts, options).dump());
}

void write_tuning_file(const std::string& path, const std::vector<AlgorithmSweep>& sweeps, const TuningRunFacts& facts,
                       const SweepOptions& options) {
  const std::string text = tuning_file_text(sweeps, facts, options);
  std::ofstream out(path);
  if (!out || !(out << text) || !out.flush()) {
    throw InvalidArgument({.op = "braid-bench"}, fmt::format("cannot write tuning file '{}'", path));
  }
  const TuningTable written = parse_tuning_json(text, path);  // what BRAID_TUNING_FILE will see
  std::printf("# tuning file %s: %zu rule%s for %d ranks on %d host(s)\n", path.c_str(), written.rules.size(),
              written.rules.size() == 1 ? "" : "s", facts.world, facts.hosts);
  for (const TuningRule& rule : written.rules) {
    std::printf("#   %-15s %12s .. %-12s bytes -> %s\n", std::string(op_kind_name(rule.op)).c_str(),
                describe_bytes(rule.min_bytes).c_str(), describe_bytes(rule.max_bytes).c_str(), rule.algorithm.c_str());
  }
  std::printf("# use it with: BRAID_TUNING_FILE=%s\n", path.c_str());
  std::fflush(stdout);
}

}  // namespace braid::bench
