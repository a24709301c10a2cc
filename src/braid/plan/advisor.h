// Layout advice: every valid (dp, tp, pp, ZeRO stage, micro-batches, schedule, recomputation,
// compression) for a model, a cluster and a global batch, estimated with the step model,
// checked with the rules, and ranked: layouts that fit in memory first, those within 90% of
// the device's memory before the tight ones, then fastest first.
#pragma once

#include <vector>

#include "braid/plan/rules.h"
#include "braid/plan/step_model.h"

namespace braid::plan {

struct AdviseInput {
  ModelSpec model;
  ClusterSpec cluster;
  int global_batch = 512;  // sequences per iteration
  int micro_batch = 1;
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::vector<Schedule> schedules{Schedule::k1F1B, Schedule::kInterleaved1F1B};
  std::vector<Recompute> recompute{Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  std::vector<CompressionSpec> compressions{CompressionSpec{}};
  int interleave_chunks = 2;
  StepOptions options;
};

struct Candidate {
  StepEstimate step;
  std::vector<Finding> findings;
};

// All candidates, ranked. Layouts whose micro-batch count would not be a whole number are
// skipped, as are tp values that do not divide the heads. Throws InvalidArgument when the
// inputs themselves are bad (global batch < 1, ...) or when no layout is valid at all.
std::vector<Candidate> advise(const AdviseInput& input);

}  // namespace braid::plan
