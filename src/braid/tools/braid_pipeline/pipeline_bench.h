// `braid-pipeline run`: runs the pipeline runtime with synthetic stages (synthetic_stage.h) on
// every rank of the job, one stage per rank, and prints on rank 0, per schedule, the bubble
// fraction three ways: theoretical (the textbook formula), simulated (the simulator with the
// requested costs, and again with the per-action times the trace measured) and measured (from
// the trace: 1 - sum over stages of compute time / (p x step time), median over steps).
#pragma once

#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "synthetic_stage.h"

namespace braid::tools {

struct PipelineBenchOptions {
  std::vector<std::string> schedules{"gpipe", "1f1b", "interleaved:2", "zb1"};
  int microbatches = 8;
  SyntheticCosts costs;
  double p2p_ms = 0;      // the simulator's transfer time
  int steps = 5;          // measured steps (median reported)
  int warmup = 1;         // steps run first and not measured
  std::string trace_dir;  // when set, each schedule's trace goes to <dir>/<schedule>/
};

// Throws InvalidArgument naming the option for out-of-range values.
void check_pipeline_bench_options(const PipelineBenchOptions& options);

// Collective over `comm` (every rank runs one stage). Returns the table rank 0 prints (other
// ranks get "").
std::string run_pipeline_bench(Communicator& comm, const PipelineBenchOptions& options);

}  // namespace braid::tools
