#include "braid/base/pipeline_schedule_kind.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/vocabulary.h"

namespace braid {

namespace {

constexpr std::array kKinds{PipelineScheduleKind::kGPipe, PipelineScheduleKind::k1F1B,
                            PipelineScheduleKind::kInterleaved1F1B, PipelineScheduleKind::kZeroBubbleH1};

// "zb1" is what braid-pipeline and braid-train have always printed; braid-plan said "zb-h1".
constexpr std::array kSpellings{
    spelling(PipelineScheduleKind::kGPipe, "gpipe"),
    spelling(PipelineScheduleKind::k1F1B, "1f1b"),
    spelling(PipelineScheduleKind::kInterleaved1F1B, "interleaved", "interleaved:V"),
    spelling(PipelineScheduleKind::kZeroBubbleH1, "zb1"),
    spelling(PipelineScheduleKind::kZeroBubbleH1, "zb-h1"),
};

constexpr std::string_view kInterleavedPrefix = "interleaved:";

constexpr Vocabulary kVocabulary{"schedule", kSpellings};

}  // namespace

std::span<const PipelineScheduleKind> all_pipeline_schedule_kinds() { return kKinds; }

std::string_view pipeline_schedule_kind_name(PipelineScheduleKind kind) {
  return kVocabulary.name(static_cast<int>(kind), "?");
}

PipelineScheduleName parse_pipeline_schedule(std::string_view text, std::string_view field) {
  if (text.starts_with(kInterleavedPrefix)) {
    std::string_view digits = text.substr(kInterleavedPrefix.size());
    int chunks = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), chunks);
    if (ec == std::errc() && end == digits.data() + digits.size() && chunks >= 1 && chunks <= kMaxPipelineChunks) {
      return {PipelineScheduleKind::kInterleaved1F1B, chunks};
    }
    throw InvalidArgument({}, fmt::format("{}schedule '{}': V in interleaved:V must be an integer in 1..{}",
                                          field_prefix(field), text, kMaxPipelineChunks));
  }
  return {static_cast<PipelineScheduleKind>(kVocabulary.parse(text, field)), std::nullopt};
}

std::string pipeline_schedule_name(PipelineScheduleKind kind, std::optional<int> chunks) {
  if (kind == PipelineScheduleKind::kInterleaved1F1B && chunks) return fmt::format("{}{}", kInterleavedPrefix, *chunks);
  return std::string(pipeline_schedule_kind_name(kind));
}

}  // namespace braid
