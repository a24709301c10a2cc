// `braid-bench overlap`: how much of the gradient communication GradSync hides behind backward.
// A synthetic model of L layers (P fp32 parameters each) runs backward as a real compute loop
// per layer (a fixed number of multiply-adds over an L1-resident buffer, calibrated on every
// rank at once, the slowest rate applied to all, so every rank does the same work); after each layer's loop its gradient is
// final and is marked ready. With overlap off every gradient is marked after the whole backward
// (communication starts when compute ends, as without bucketing); with overlap on GradSync
// launches each bucket as soon as it is complete.
//
// Per configuration (bucket cap x codec x overlap) the table shows the median over --steps of:
// step time, backward compute time, communication time (the buckets' allreduce durations on the
// background thread), exposed communication (the time finish() waited), the share of
// communication hidden (1 - exposed / communication) and the bytes one rank sent.
//
// --compute-ms sets the backward's total compute; by default it is calibrated so that
// communication is --comm-share (default 0.6) of compute, from a first step without overlap.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "braid/comm/communicator.h"

namespace braid::bench {

struct OverlapOptions {
  int layers = 16;
  std::string params_per_layer = "1M";  // elements (K, M suffixes)
  std::string buckets = "1,4,25,auto";  // bucket caps to compare (MiB, or auto)
  std::string codecs = "none";          // codecs to compare
  std::string overlap = "off,on";
  int steps = 7;                        // timed steps per configuration (median), after 2 warm-up steps
  double compute_ms = 0;                // total backward compute per step; 0: calibrate from comm-share
  double comm_share = 0.6;              // communication time / compute time when calibrating
  bool registered_buckets = true;       // GradSyncOptions::registered_buckets (--registered-buckets on|off)
  std::string json_path;
};

void add_overlap_flags(CLI::App& app, OverlapOptions& options);
// Checks the options before joining the job (InvalidArgument naming the bad one).
void check_overlap_options(const OverlapOptions& options);
int run_overlap_bench(Communicator& comm, const OverlapOptions& options);

}  // namespace braid::bench
