// The runs that compare algorithms instead of measuring one:
//   braid-bench <op> ... --tune FILE and/or --plot FILE.png   (one operation)
//   braid-bench tune -o FILE [--ops allreduce,allgather] ...  (several operations, one file)
// Both time every algorithm at every size (algorithm_sweep.h) and print the winner per size;
// rank 0 then writes the tuning file (tuning_output.h) and/or draws the plot (busbw_plot.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_options.h"
#include "collective_bench.h"

namespace braid::bench {

// `braid-bench <op> --tune/--plot`. Returns the exit status (1 if any result was wrong).
int run_algorithm_bench(Communicator& comm, const CollectiveSpec& spec, const SweepOptions& options);

struct TuneOptions {
  SweepOptions sweep;
  std::string output;  // -o FILE
  std::string ops;     // --ops a,b: empty tunes every collective braid-bench measures
};

// The flags of `braid-bench tune`.
void add_tune_flags(CLI::App& app, TuneOptions& options);

// The specs named by a comma-separated list (every spec when empty); InvalidArgument names an
// unknown operation and the choices. Checked before joining the job.
std::vector<CollectiveSpec> specs_to_tune(const std::string& ops);

// `braid-bench tune`: one sweep per operation, then one tuning file with all their rules.
int run_tune(Communicator& comm, const TuneOptions& options);

}  // namespace braid::bench
