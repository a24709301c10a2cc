// The pipeline-parallel schedules braid knows: the one definition the schedules themselves
// (parallel/pipeline_schedule.h), the planner's bubble arithmetic (plan/bubble.h) and the
// tools (braid-pipeline, braid-train, braid-plan) share, with one way to spell each.
//
// Names (pipeline_schedule_kind_name prints the first; every parser accepts all):
//   gpipe
//   1f1b
//   interleaved:V   Megatron-LM's interleaved 1F1B with V model chunks per stage; bare
//                   "interleaved" is accepted where a tool takes V from its own flag (braid-plan -v)
//   zb1 (alias zb-h1)  ZB-H1, the zero-bubble schedule of Qi et al.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace braid {

enum class PipelineScheduleKind { kGPipe, k1F1B, kInterleaved1F1B, kZeroBubbleH1 };

// Every kind, in the order tools list them.
std::span<const PipelineScheduleKind> all_pipeline_schedule_kinds();
// "gpipe", "1f1b", "interleaved", "zb1".
std::string_view pipeline_schedule_kind_name(PipelineScheduleKind kind);

// The most model chunks per stage "interleaved:V" may ask for.
inline constexpr int kMaxPipelineChunks = 64;

// A schedule as a command line names it: its kind, and V when it said "interleaved:V".
struct PipelineScheduleName {
  PipelineScheduleKind kind;
  std::optional<int> chunks;  // only from "interleaved:V", 1 <= V <= kMaxPipelineChunks
};

// Parses a kind's name or alias, or "interleaved:V". Throws InvalidArgument
//   "<field>: unknown schedule '<text>' (accepted: gpipe, 1f1b, interleaved:V or zb1 (alias zb-h1))"
// or, for a V that is not an integer in 1..kMaxPipelineChunks, one naming that range.
PipelineScheduleName parse_pipeline_schedule(std::string_view text, std::string_view field = {});
// The name parse_pipeline_schedule reads back: the kind's name, or "interleaved:V" when the
// kind is interleaved and `chunks` is given.
std::string pipeline_schedule_name(PipelineScheduleKind kind, std::optional<int> chunks = std::nullopt);

}  // namespace braid
