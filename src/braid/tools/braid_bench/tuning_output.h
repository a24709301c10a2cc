// What `braid-bench --tune FILE` and `braid-bench tune -o FILE` leave behind: a tuning file
// (collectives/tuning_file.h) whose rules are the per-size winners of the sweeps merged into
// byte ranges (rules_from_winners), keyed on this run's exact world size and host count, with
// the measurements themselves in its metadata so that a reader can see how close each call was.
#pragma once

#include <string>
#include <vector>

#include "algorithm_sweep.h"
#include "bench_options.h"

namespace braid::bench {

// Facts about the run recorded in the file's metadata.
struct TuningRunFacts {
  int world = 1;
  int hosts = 1;
  double memcpy_gbs = 0;
  std::string date;      // ISO 8601, UTC
  std::string hostname;
};

// This run's facts (date and hostname of the calling process).
TuningRunFacts current_run_facts(const Communicator& comm, double memcpy_gbs);

// The text of the tuning file for these sweeps (pure: tested without running anything).
std::string tuning_file_text(const std::vector<AlgorithmSweep>& sweeps, const TuningRunFacts& facts,
                             const SweepOptions& options);

// Writes the file (call on rank 0 only) and prints its rules as "#" comment lines.
void write_tuning_file(const std::string& path, const std::vector<AlgorithmSweep>& sweeps, const TuningRunFacts& facts,
                       const SweepOptions& options);

}  // namespace braid::bench
