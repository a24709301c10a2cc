// The JSON files braid-plan calibrate reads and writes.
//
// braid-bench --json output (src/braid/tools/braid_bench/result_table.cc):
//   {"benchmark": "allreduce", "meta": {"ranks": 4, "algorithm": "default", ...},
//    "rows": [{"size": 65536, "time(us)": 41.2, ...}, ...]}
// and the algorithm sweep's form, one "<algorithm>(us)" column per algorithm ("-" where it
// did not run): {"benchmark": "allreduce algorithms", "rows": [{"size": ..., "ring(us)": ...}]}.
//
// The fitted model calibrate -o writes (read back by collective --calibration and
// calibrate --model), one entry per fitted (op, algorithm):
//   {"fits": [{"op": "allreduce", "algorithm": "default", "bench_algorithm": "default",
//              "ranks": [2, 4], "link": "measured", "model": "ring", "gamma": 0,
//              "segments": [{"min_bytes": ..., "max_bytes": ..., "alpha": ..., "beta": ...,
//                            "bandwidth": ...}],
//              "rms_relative_error": ..., "max_relative_error": ...}]}
// "algorithm" is the fit's label ("default (2 ranks, a.json)" with --per-file); files written
// before "bench_algorithm" and "ranks" existed are read with the label as the algorithm and the
// world sizes unknown.
#pragma once

#include <string>
#include <string_view>
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

struct ModelFit {
  std::string label;            // "default", or "default (2 ranks, a.json)" when fitted per file
  std::string bench_algorithm;  // braid-bench's name: what a measured run is matched by
  std::vector<int> ranks;       // the world sizes it was fitted on, ascending (empty: unknown)
  std::string link;             // the user's name for the link measured
  Calibration calibration;      // op, formula, gamma, segments and the in-sample errors
};

// `flag` names the option the path came from in error messages ("--model", "--calibration").
// Throws InvalidArgument for an unreadable file, JSON that is not a calibrate -o file, or a fit
// without a valid op, formula or segment.
std::vector<ModelFit> read_model_file(const std::string& path, std::string_view flag);
void write_model_file(const std::string& path, const std::vector<ModelFit>& fits, std::string_view flag);

}  // namespace braid::plan::cli
