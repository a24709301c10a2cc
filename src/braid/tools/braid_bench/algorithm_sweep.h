// The sweep behind --tune and --plot: every algorithm of an operation (or those named with
// --algo a,b) timed at every size of the sweep, the same way the plain sweep times one
// (collective_timing.h). At each size the algorithms run one after the other, so that a
// burst of noise on this shared machine hurts one size of all algorithms rather than all
// sizes of one. Rank 0 prints one row per size (time per algorithm and the winner) and
// progress on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_options.h"
#include "braid/collectives/tuning_table.h"
#include "collective_bench.h"

namespace braid::bench {

struct AlgorithmSweep {
  std::string name;                    // the operation, "allreduce"
  OpKind op = OpKind::kAllreduce;
  std::vector<std::uint64_t> bytes;    // per size: braid-bench's size column (selection_bytes)
  std::vector<std::int64_t> counts;    // per size: the operation's count argument
  std::vector<std::string> algorithms;
  // seconds[a][s]: algorithm a at size s (per call, slowest rank, median of the batches); NaN
  // where the algorithm refuses the call or produced a wrong result.
  std::vector<std::vector<double>> seconds;
  std::int64_t wrong = 0;              // wrong elements over every algorithm and size

  // The fastest algorithm per size ("" where none ran), ascending sizes.
  std::vector<SizeWinner> winners() const;
};

// The algorithms to sweep: the comma-separated `requested` list (--algo), or, when empty,
// every registered algorithm of `op`. InvalidArgument names an unknown one and the choices.
std::vector<std::string> algorithms_to_sweep(OpKind op, const std::string& requested);

// Runs the sweep (collective: every rank calls it with the same arguments).
AlgorithmSweep run_algorithm_sweep(Communicator& comm, const CollectiveSpec& spec, const SweepOptions& options,
                                   const std::vector<std::string>& algorithms);

}  // namespace braid::bench
