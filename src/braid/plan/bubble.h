// Pipeline bubble: the share of an iteration a pipeline stage sits idle while the pipeline
// fills and drains.
//
//   GPipe, 1F1B   (p-1) / (m + p - 1)                     seeds/000, seeds/004 2.4
//   interleaved   (p-1) / (v m + p - 1)                   v model chunks per stage: the bubble
//                                                         relative to useful work, (p-1)/m,
//                                                         shrinks v-fold (seed 2.4)
//   ZB-H1         (p-1)(F+B-W) / (m(F+B+W) + (p-1)(F+B-W)) backward split into input gradient
//                                                         B and weight gradient W (Qi et al.,
//                                                         "Zero Bubble Pipeline Parallelism",
//                                                         2023); F = B = W gives 1/3 of 1F1B's
//                                                         bubble time
//
// 1F1B has GPipe's bubble but keeps at most p micro-batches in flight instead of m.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "braid/base/pipeline_schedule_kind.h"
#include "braid/plan/estimate.h"

namespace braid::plan {

// The schedules, their names and their parser are braid's one schedule vocabulary
// (base/pipeline_schedule_kind.h), shared with parallel/ and the tools.
using Schedule = PipelineScheduleKind;

struct BubbleInput {
  int stages = 4;        // p
  int microbatches = 8;  // m
  int chunks = 1;        // v, interleaved only
  // Relative durations of forward, input-gradient and weight-gradient work (ZB-H1 only).
  double forward = 1, backward_input = 1, backward_weight = 1;
};

// The bubble fraction of the iteration (0..1), plus "bubble_over_ideal" (bubble time / useful
// time) and the number of micro-batches a stage keeps in flight (activation memory).
// Throws InvalidArgument for p < 1, m < 1, v < 1 or an interleaved schedule with m % p != 0.
Estimates pipeline_bubble(Schedule schedule, const BubbleInput& input);

// The bubble fraction alone.
double bubble_fraction(Schedule schedule, const BubbleInput& input);

}  // namespace braid::plan
