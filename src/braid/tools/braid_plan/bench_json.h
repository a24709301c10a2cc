// Reading the JSON braid-bench writes with --json (src/braid/tools/braid_bench/result_table.cc):
//   {"benchmark": "allreduce", "meta": {"ranks": 4, "algorithm": "default", ...},
//    "rows": [{"size": 65536, "time(us)": 41.2, ...}, ...]}
// and the algorithm sweep's form, one "<algorithm>(us)" column per algorithm ("-" where it
// did not run): {"benchmark": "allreduce algorithms", "rows": [{"size": ..., "ring(us)": ...}]}.
#pragma once

#include <string>
#include <vector>

#include "braid/plan/calibration.h"

namespace braid::plan::cli {

struct BenchRun {
  std::string file;
  std::string op;         // "allreduce", from the benchmark name
  std::string algorithm;  // as braid-bench names it ("default", "ring", "shm_direct", ...)
  int ranks = 0;
  std::vector<Sample> samples;
};

// Throws InvalidArgument naming the file for an unreadable file, JSON that is not braid-bench's,
// or a file without any timed row.
std::vector<BenchRun> read_bench_json(const std::string& path);

}  // namespace braid::plan::cli
