// Pipeline schedules as pure functions: (kind, stages p, micro-batches m, chunks per stage v)
// -> every stage's ordered list of actions (pipeline_action.h). Nothing here talks to a
// communicator: a schedule can be printed, validated (schedule_validator.h) and simulated
// (pipeline_simulator.h) before any rank runs it (pipeline_runtime.h).
//
// Kinds (docs/pipeline.md has the diagrams and the bubble arithmetic):
//   gpipe          all forwards, then all backwards (Huang et al. 2019). Any m >= 1.
//                  Holds m micro-batches' activations.
//   1f1b           PipeDream-Flush (Narayanan et al. 2021): stage s runs min(p-s-1, m) warm-up
//                  forwards, then alternates one forward / one backward, then drains the
//                  backwards. Same bubble as GPipe, (p-1)/(m+p-1), but holds at most p
//                  micro-batches' activations. Any m >= 1.
//   interleaved:V  Megatron-LM's interleaved 1F1B (Narayanan et al. SC'21): v chunks per stage,
//                  bubble divided by v for v times more P2P transfers. Requires m % p == 0
//                  (Megatron-LM raises "number of microbatches is not divisible by pipeline-
//                  parallel size when using interleaved schedule": its schedule walks the
//                  micro-batches in groups of p per chunk). V = 1 is plain 1f1b.
//   zb1 (zb-h1)    ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): backward
//                  split into I (input gradient, on the critical path) and W (weight gradient,
//                  deferrable); W passes fill what would be bubbles, with no stage holding more
//                  than p micro-batches' activations (1F1B's peak). v = 1 only. Any m >= 1.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "braid/base/pipeline_schedule_kind.h"
#include "braid/parallel/pipeline_action.h"

namespace braid::parallel {

// The kinds and their names are braid's one schedule vocabulary (base/pipeline_schedule_kind.h),
// shared with the planner and the tools.
using ScheduleKind = PipelineScheduleKind;

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int stages = 1;        // p
  int microbatches = 1;  // m
  int chunks = 1;        // v: model chunks per stage (interleaved only; 1 otherwise)
};

struct Schedule {
  ScheduleSpec spec;
  std::vector<std::vector<Action>> stages;  // stages[s]: stage s's actions in execution order

  // Whether backward is split into I and W (zero-bubble kinds).
  bool split_backward() const { return spec.kind == ScheduleKind::kZeroBubbleH1; }
  int virtual_stages() const { return spec.stages * spec.chunks; }
};

// Parses "gpipe", "1f1b", "interleaved:V" (1 <= V <= 64) and "zb1" (alias "zb-h1") into a
// kind and a chunk count with braid's one schedule parser (parse_pipeline_schedule); a bare
// "interleaved" is refused, having no V. Throws InvalidArgument naming the text and the
// accepted forms.
struct ParsedKind {
  ScheduleKind kind;
  int chunks = 1;
};
ParsedKind parse_schedule_kind(std::string_view text, std::string_view field = {});
// "gpipe", "1f1b", "interleaved:2", "zb1" (round-trips through parse_schedule_kind).
std::string schedule_name(const ScheduleSpec& spec);

// Throws InvalidArgument naming the field and its valid range when `spec` cannot be scheduled:
// stages/microbatches/chunks < 1, chunks != 1 for a kind without chunks, or an interleaved m
// that is not a multiple of p.
void check_schedule_spec(const ScheduleSpec& spec);

// The schedule for `spec` (check_schedule_spec first).
Schedule make_schedule(const ScheduleSpec& spec);

// --- virtual-stage arithmetic (Megatron's layout) ---------------------------------------
// The virtual stage of (stage, chunk): chunk * p + stage.
inline int virtual_stage(const ScheduleSpec& spec, int stage, int chunk) { return chunk * spec.stages + stage; }
inline int stage_of(const ScheduleSpec& spec, int virtual_stage) { return virtual_stage % spec.stages; }
inline int chunk_of(const ScheduleSpec& spec, int virtual_stage) { return virtual_stage / spec.stages; }

// Building block of every kind: given each stage's order of *compute* actions, inserts the
// send/recv actions (a recv right before the compute that needs the data, a send right after
// the compute that produced it; none between chunks on the same stage).
Schedule with_transfers(const ScheduleSpec& spec, std::vector<std::vector<Action>> compute_order);

// One function per kind (schedule_<kind>.cc); each returns compute actions only.
std::vector<std::vector<Action>> gpipe_compute_order(const ScheduleSpec& spec);
std::vector<std::vector<Action>> one_f_one_b_compute_order(const ScheduleSpec& spec);
std::vector<std::vector<Action>> interleaved_compute_order(const ScheduleSpec& spec);
std::vector<std::vector<Action>> zero_bubble_h1_compute_order(const ScheduleSpec& spec);

}  // namespace braid::parallel
