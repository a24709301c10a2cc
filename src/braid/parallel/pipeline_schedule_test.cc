#include "braid/parallel/pipeline_schedule.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/parallel/schedule_validator.h"

namespace braid::parallel {
namespace {

std::vector<ActionType> compute_types(const std::vector<Action>& actions) {
  std::vector<ActionType> out;
  for (const Action& a : actions) {
    if (is_compute(a.type)) out.push_back(a.type);
  }
  return out;
}

TEST(ScheduleKind, ParsesEveryForm) {
  EXPECT_EQ(parse_schedule_kind("gpipe").kind, ScheduleKind::kGPipe);
  EXPECT_EQ(parse_schedule_kind("1f1b").kind, ScheduleKind::k1F1B);
  EXPECT_EQ(parse_schedule_kind("zb1").kind, ScheduleKind::kZeroBubbleH1);
  ParsedKind interleaved = parse_schedule_kind("interleaved:3");
  EXPECT_EQ(interleaved.kind, ScheduleKind::kInterleaved1F1B);
  EXPECT_EQ(interleaved.chunks, 3);
  EXPECT_EQ(schedule_name({ScheduleKind::kInterleaved1F1B, 2, 4, 3}), "interleaved:3");
}

TEST(ScheduleKind, RejectsUnknownNamesAndBadChunkCounts) {
  for (const char* bad : {"", "1F1B", "pipedream", "interleaved", "interleaved:", "interleaved:0", "interleaved:x",
                          "interleaved:2x", "interleaved:-1", "interleaved:1000"}) {
    EXPECT_THROW(parse_schedule_kind(bad), InvalidArgument) << bad;
  }
  try {
    parse_schedule_kind("zb2");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("gpipe, 1f1b, interleaved:V or zb1"), std::string::npos) << e.what();
  }
}

TEST(ScheduleSpec, BadFieldsAreNamed) {
  auto message = [](const ScheduleSpec& spec) {
    try {
      make_schedule(spec);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({ScheduleKind::k1F1B, 0, 4, 1}).find("stages (p) must be in 1..4096, got 0"), std::string::npos);
  EXPECT_NE(message({ScheduleKind::k1F1B, 2, 0, 1}).find("microbatches (m)"), std::string::npos);
  EXPECT_NE(message({ScheduleKind::k1F1B, 2, 4, 2}).find("chunks (v) must be 1 for schedule 1f1b"), std::string::npos);
  EXPECT_NE(message({ScheduleKind::kInterleaved1F1B, 4, 6, 2}).find("multiple of stages (p)"), std::string::npos);
  EXPECT_NE(message({ScheduleKind::kInterleaved1F1B, 4, 2, 2}).find("got m=2, p=4"), std::string::npos);
}

// Every built-in schedule, for p in 1..8, m in 1..32 and v in 1..4 wherever the kind accepts
// (p, m, v), passes the validator: every action exactly once, dependencies, no deadlock.
TEST(BuiltinSchedules, AllValidOverTheGrid) {
  int validated = 0;
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 32; ++m) {
      for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B, ScheduleKind::kZeroBubbleH1}) {
        ASSERT_NO_THROW(validate_schedule(make_schedule({kind, p, m, 1})))
            << schedule_name({kind, p, m, 1}) << " p=" << p << " m=" << m;
        ++validated;
      }
      for (int v = 1; v <= 4; ++v) {
        const ScheduleSpec spec{ScheduleKind::kInterleaved1F1B, p, m, v};
        if (v > 1 && m % p != 0) {
          EXPECT_THROW(make_schedule(spec), InvalidArgument);
          continue;
        }
        ASSERT_NO_THROW(validate_schedule(make_schedule(spec))) << "interleaved p=" << p << " m=" << m << " v=" << v;
        ++validated;
      }
    }
  }
  EXPECT_GT(validated, 1000);
}

TEST(OneFOneB, WarmupThenAlternateThenDrain) {
  Schedule s = make_schedule({ScheduleKind::k1F1B, 4, 6, 1});
  using T = ActionType;
  // Stage 1: 2 warm-up forwards, 4 F/B pairs, 2 backwards.
  EXPECT_EQ(compute_types(s.stages[1]),
            (std::vector<T>{T::kForward, T::kForward, T::kForward, T::kBackward, T::kForward, T::kBackward, T::kForward,
                            T::kBackward, T::kForward, T::kBackward, T::kBackward, T::kBackward}));
  // The last stage alternates from the start.
  std::vector<ActionType> last = compute_types(s.stages[3]);
  for (std::size_t i = 0; i < last.size(); ++i) EXPECT_EQ(last[i], i % 2 == 0 ? T::kForward : T::kBackward);
}

TEST(Transfers, RecvBeforeComputeAndSendAfter) {
  Schedule s = make_schedule({ScheduleKind::kGPipe, 3, 1, 1});
  using T = ActionType;
  std::vector<Action> middle = s.stages[1];
  ASSERT_EQ(middle.size(), 6u);
  EXPECT_EQ(middle[0], (Action{T::kRecvActivation, 0, 0, 0}));
  EXPECT_EQ(middle[1], (Action{T::kForward, 0, 0, -1}));
  EXPECT_EQ(middle[2], (Action{T::kSendActivation, 0, 0, 2}));
  EXPECT_EQ(middle[3], (Action{T::kRecvGradient, 0, 0, 2}));
  EXPECT_EQ(middle[4], (Action{T::kBackward, 0, 0, -1}));
  EXPECT_EQ(middle[5], (Action{T::kSendGradient, 0, 0, 0}));
}

TEST(Transfers, InterleavedWrapsFromLastStageToFirst) {
  // p = 2, v = 2: virtual stages 0 (stage 0), 1 (stage 1), 2 (stage 0), 3 (stage 1).
  Schedule s = make_schedule({ScheduleKind::kInterleaved1F1B, 2, 2, 2});
  bool stage1_sends_chunk0_to_stage0 = false;
  for (const Action& a : s.stages[1]) {
    if (a.type == ActionType::kSendActivation && a.chunk == 0) stage1_sends_chunk0_to_stage0 = a.peer == 0;
  }
  EXPECT_TRUE(stage1_sends_chunk0_to_stage0);
  // One stage with several chunks passes data locally: no transfers at all.
  const Schedule single = make_schedule({ScheduleKind::kInterleaved1F1B, 1, 3, 4});
  for (const Action& a : single.stages[0]) EXPECT_TRUE(is_compute(a.type));
}

TEST(ZeroBubble, SplitsBackwardAndDefersWeightGradients) {
  Schedule s = make_schedule({ScheduleKind::kZeroBubbleH1, 4, 8, 1});
  EXPECT_TRUE(s.split_backward());
  // Stage 3 runs W of micro-batch k only after I of micro-batch k+3.
  int inputs_done = 0;
  for (const Action& a : s.stages[3]) {
    if (a.type == ActionType::kBackwardInput) ++inputs_done;
    if (a.type == ActionType::kBackwardWeight && a.microbatch < 8 - 3) {
      EXPECT_GE(inputs_done, a.microbatch + 1 + 3);
    }
    EXPECT_NE(a.type, ActionType::kBackward);
  }
}

}  // namespace
}  // namespace braid::parallel
