#include "braid/parallel/pipeline_schedule.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/vocabulary.h"

namespace braid::parallel {
namespace {

// Generous bounds that keep every count and message tag far from int overflow.
constexpr int kMaxStages = 4096;
constexpr int kMaxMicrobatches = 1 << 16;
constexpr int kMaxChunks = kMaxPipelineChunks;

[[noreturn]] void invalid(const std::string& detail) { throw InvalidArgument({}, detail); }

void check_range(const char* field, int value, int max) {
  if (value < 1 || value > max) invalid(fmt::format("{} must be in 1..{}, got {}", field, max, value));
}

}  // namespace

ParsedKind parse_schedule_kind(std::string_view text, std::string_view field) {
  const PipelineScheduleName name = parse_pipeline_schedule(text, field);
  // A schedule is a value: an interleaved one needs its chunk count, here from its name.
  if (name.kind == ScheduleKind::kInterleaved1F1B && !name.chunks) {
    invalid(fmt::format("{}schedule '{}': say how many chunks per stage, interleaved:V with V in 1..{}",
                        field_prefix(field), text, kMaxChunks));
  }
  return {name.kind, name.chunks.value_or(1)};
}

std::string schedule_name(const ScheduleSpec& spec) {
  const bool interleaved = spec.kind == ScheduleKind::kInterleaved1F1B;
  return pipeline_schedule_name(spec.kind, interleaved ? std::optional<int>(spec.chunks) : std::nullopt);
}

void check_schedule_spec(const ScheduleSpec& spec) {
  check_range("stages (p)", spec.stages, kMaxStages);
  check_range("microbatches (m)", spec.microbatches, kMaxMicrobatches);
  check_range("chunks (v)", spec.chunks, kMaxChunks);
  if (spec.kind != ScheduleKind::kInterleaved1F1B && spec.chunks != 1) {
    invalid(fmt::format("chunks (v) must be 1 for schedule {}, got {} (only interleaved:V has chunks)",
                        schedule_name({spec.kind, spec.stages, spec.microbatches, 1}), spec.chunks));
  }
  if (spec.kind == ScheduleKind::kInterleaved1F1B && spec.chunks > 1 && spec.microbatches % spec.stages != 0) {
    invalid(
        fmt::format("microbatches (m) must be a multiple of stages (p) for {}: got m={}, p={} "
                    "(as in Megatron-LM, the schedule walks micro-batches in groups of p per chunk)",
                    schedule_name(spec), spec.microbatches, spec.stages));
  }
}

Schedule make_schedule(const ScheduleSpec& spec) {
  check_schedule_spec(spec);
  switch (spec.kind) {
    case ScheduleKind::kGPipe: return with_transfers(spec, gpipe_compute_order(spec));
    case ScheduleKind::k1F1B: return with_transfers(spec, one_f_one_b_compute_order(spec));
    case ScheduleKind::kInterleaved1F1B:
      if (spec.chunks == 1) return with_transfers(spec, one_f_one_b_compute_order(spec));
      return with_transfers(spec, interleaved_compute_order(spec));
    case ScheduleKind::kZeroBubbleH1: return with_transfers(spec, zero_bubble_h1_compute_order(spec));
  }
  invalid("unknown schedule kind");
}

Schedule with_transfers(const ScheduleSpec& spec, std::vector<std::vector<Action>> compute_order) {
  Schedule schedule{spec, {}};
  const int last_virtual = spec.stages * spec.chunks - 1;
  schedule.stages.resize(compute_order.size());
  for (std::size_t s = 0; s < compute_order.size(); ++s) {
    const int stage = static_cast<int>(s);
    std::vector<Action>& out = schedule.stages[s];
    for (const Action& a : compute_order[s]) {
      const int vs = virtual_stage(spec, stage, a.chunk);
      const bool has_prev = vs > 0 && stage_of(spec, vs - 1) != stage;
      const bool has_next = vs < last_virtual && stage_of(spec, vs + 1) != stage;
      const int prev = has_prev ? stage_of(spec, vs - 1) : -1;
      const int next = has_next ? stage_of(spec, vs + 1) : -1;
      auto transfer = [&](ActionType type, int peer) { out.push_back({type, a.microbatch, a.chunk, peer}); };
      switch (a.type) {
        case ActionType::kForward:
          if (has_prev) transfer(ActionType::kRecvActivation, prev);
          out.push_back(a);
          if (has_next) transfer(ActionType::kSendActivation, next);
          break;
        case ActionType::kBackward:
        case ActionType::kBackwardInput:
          if (has_next) transfer(ActionType::kRecvGradient, next);
          out.push_back(a);
          if (has_prev) transfer(ActionType::kSendGradient, prev);
          break;
        default: out.push_back(a);
      }
    }
  }
  return schedule;
}

}  // namespace braid::parallel
