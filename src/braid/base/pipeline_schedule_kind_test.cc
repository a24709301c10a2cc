// The one vocabulary of pipeline schedules: every name reads back as its kind, zb-h1 is zb1,
// interleaved:V carries its chunks, and an unknown name is refused listing what is accepted.
#include "braid/base/pipeline_schedule_kind.h"

#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

std::string refusal(std::string_view text) {
  try {
    parse_pipeline_schedule(text, "--schedule");
  } catch (const InvalidArgument& e) {
    return e.detail();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return "";
}

TEST(PipelineScheduleKind, EveryNameReadsBackAsItsKind) {
  ASSERT_EQ(all_pipeline_schedule_kinds().size(), 4u);
  for (PipelineScheduleKind kind : all_pipeline_schedule_kinds()) {
    PipelineScheduleName parsed = parse_pipeline_schedule(pipeline_schedule_kind_name(kind));
    EXPECT_EQ(parsed.kind, kind) << pipeline_schedule_kind_name(kind);
    EXPECT_EQ(parsed.chunks, std::nullopt);
    for (int chunks : {1, 2, kMaxPipelineChunks}) {
      PipelineScheduleName with = parse_pipeline_schedule(pipeline_schedule_name(kind, chunks));
      EXPECT_EQ(with.kind, kind) << pipeline_schedule_name(kind, chunks);
    }
  }
}

TEST(PipelineScheduleKind, NamesAreTheOnesTheToolsPrint) {
  EXPECT_EQ(pipeline_schedule_kind_name(PipelineScheduleKind::kGPipe), "gpipe");
  EXPECT_EQ(pipeline_schedule_kind_name(PipelineScheduleKind::k1F1B), "1f1b");
  EXPECT_EQ(pipeline_schedule_kind_name(PipelineScheduleKind::kInterleaved1F1B), "interleaved");
  EXPECT_EQ(pipeline_schedule_kind_name(PipelineScheduleKind::kZeroBubbleH1), "zb1");
  EXPECT_EQ(pipeline_schedule_name(PipelineScheduleKind::kInterleaved1F1B, 3), "interleaved:3");
  EXPECT_EQ(pipeline_schedule_name(PipelineScheduleKind::kZeroBubbleH1, 3), "zb1");  // only interleaved has chunks
}

TEST(PipelineScheduleKind, ZbH1IsAnAliasOfZb1) {
  EXPECT_EQ(parse_pipeline_schedule("zb-h1").kind, PipelineScheduleKind::kZeroBubbleH1);
  EXPECT_EQ(parse_pipeline_schedule("zb1").kind, PipelineScheduleKind::kZeroBubbleH1);
}

TEST(PipelineScheduleKind, InterleavedCarriesItsChunks) {
  PipelineScheduleName parsed = parse_pipeline_schedule("interleaved:4");
  EXPECT_EQ(parsed.kind, PipelineScheduleKind::kInterleaved1F1B);
  EXPECT_EQ(parsed.chunks, 4);
  EXPECT_EQ(parse_pipeline_schedule("interleaved").chunks, std::nullopt);
  EXPECT_EQ(refusal("interleaved:0"), "--schedule: schedule 'interleaved:0': V in interleaved:V must be an integer in 1..64");
  EXPECT_EQ(refusal("interleaved:65"), "--schedule: schedule 'interleaved:65': V in interleaved:V must be an integer in 1..64");
  EXPECT_EQ(refusal("interleaved:2x"), "--schedule: schedule 'interleaved:2x': V in interleaved:V must be an integer in 1..64");
}

TEST(PipelineScheduleKind, AnUnknownNameIsRefusedListingEveryAcceptedOne) {
  EXPECT_EQ(refusal("pipedream"),
            "--schedule: unknown schedule 'pipedream' (accepted: gpipe, 1f1b, interleaved:V or zb1 (alias zb-h1))");
  EXPECT_EQ(refusal("zb2").find("unknown schedule 'zb2'"), 12u);  // after "--schedule: "
}

}  // namespace
}  // namespace braid
