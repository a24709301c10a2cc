// The validator rejects hand-broken schedules with a message naming the stage, the action and
// the micro-batch.
#include "braid/parallel/schedule_validator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

using T = ActionType;

std::string validation_error(const Schedule& s) {
  try {
    validate_schedule(s);
  } catch (const InvalidArgument& e) {
    return e.detail();
  }
  return "accepted";
}

std::size_t find(const std::vector<Action>& list, const Action& a) {
  auto it = std::find(list.begin(), list.end(), a);
  EXPECT_NE(it, list.end()) << describe(a);
  return static_cast<std::size_t>(it - list.begin());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Validator, RejectsBackwardBeforeItsForward) {
  Schedule s = make_schedule({ScheduleKind::k1F1B, 2, 4, 1});
  std::vector<Action>& last = s.stages[1];
  std::swap(last[find(last, {T::kForward, 2, 0, -1})], last[find(last, {T::kBackward, 2, 0, -1})]);
  std::string error = validation_error(s);
  EXPECT_TRUE(contains(error, "stage 1: B(mb 2, chunk 0)")) << error;
  EXPECT_TRUE(contains(error, "runs before F(mb 2, chunk 0) on this stage")) << error;
}

TEST(Validator, RejectsForwardBeforeItsReceive) {
  Schedule s = make_schedule({ScheduleKind::kGPipe, 3, 2, 1});
  std::vector<Action>& middle = s.stages[1];
  std::swap(middle[find(middle, {T::kRecvActivation, 1, 0, 0})], middle[find(middle, {T::kForward, 1, 0, -1})]);
  std::string error = validation_error(s);
  EXPECT_TRUE(contains(error, "stage 1: F(mb 1, chunk 0)")) << error;
  EXPECT_TRUE(contains(error, "recv-act(mb 1, chunk 0, from stage 0)")) << error;
}

TEST(Validator, RejectsLocalChunkOrderViolation) {
  // One stage, two chunks: F of chunk 1 needs F of chunk 0 first (no transfer in between).
  Schedule s = make_schedule({ScheduleKind::kInterleaved1F1B, 1, 2, 2});
  std::vector<Action>& only = s.stages[0];
  std::swap(only[find(only, {T::kForward, 0, 0, -1})], only[find(only, {T::kForward, 0, 1, -1})]);
  std::string error = validation_error(s);
  EXPECT_TRUE(contains(error, "stage 0: F(mb 0, chunk 1)")) << error;
  EXPECT_TRUE(contains(error, "F(mb 0, chunk 0) on stage 0 (virtual stage 0)")) << error;
}

TEST(Validator, RejectsWeightGradientBeforeInputGradient) {
  Schedule s = make_schedule({ScheduleKind::kZeroBubbleH1, 2, 2, 1});
  std::vector<Action>& first = s.stages[0];
  std::swap(first[find(first, {T::kBackwardInput, 1, 0, -1})], first[find(first, {T::kBackwardWeight, 1, 0, -1})]);
  std::string error = validation_error(s);
  EXPECT_TRUE(contains(error, "stage 0: W(mb 1, chunk 0)")) << error;
}

TEST(Validator, RejectsMissingAction) {
  Schedule s = make_schedule({ScheduleKind::k1F1B, 4, 8, 1});
  std::vector<Action>& stage2 = s.stages[2];
  stage2.erase(stage2.begin() + static_cast<std::ptrdiff_t>(find(stage2, {T::kBackward, 5, 0, -1})));
  EXPECT_EQ(validation_error(s), "schedule: stage 2: B(mb 5, chunk 0) is missing");
}

TEST(Validator, RejectsDuplicateAction) {
  Schedule s = make_schedule({ScheduleKind::kGPipe, 2, 3, 1});
  s.stages[0].push_back({T::kForward, 1, 0, -1});
  EXPECT_TRUE(contains(validation_error(s), "stage 0: F(mb 1, chunk 0) appears more than once")) << validation_error(s);
}

TEST(Validator, RejectsForeignActionKinds) {
  Schedule s = make_schedule({ScheduleKind::k1F1B, 2, 2, 1});
  std::vector<Action>& first = s.stages[0];
  first[find(first, {T::kBackward, 0, 0, -1})].type = T::kBackwardInput;  // I in a schedule without split
  EXPECT_TRUE(contains(validation_error(s), "stage 0: I(mb 0, chunk 0) appears more than once, or does not belong"));
}

TEST(Validator, RejectsOutOfRangeFieldsAndWrongPeer) {
  Schedule s = make_schedule({ScheduleKind::k1F1B, 2, 2, 1});
  s.stages[1][1].microbatch = 7;
  EXPECT_TRUE(contains(validation_error(s), "micro-batch 7 outside 0..1")) << validation_error(s);
  s = make_schedule({ScheduleKind::k1F1B, 3, 2, 1});
  s.stages[1][0].peer = 2;  // recv-act of stage 1 comes from stage 0
  EXPECT_TRUE(contains(validation_error(s), "names the wrong peer")) << validation_error(s);
  s = make_schedule({ScheduleKind::k1F1B, 3, 2, 1});
  s.stages.pop_back();
  EXPECT_EQ(validation_error(s), "schedule: 2 action lists for 3 stages");
}

TEST(Validator, RejectsDeadlockingOrder) {
  // Stage 0 waits for the gradient of micro-batch 0 before sending its activation: stage 1
  // waits for that activation. Every action is present and locally ordered; only the
  // cross-stage wait cycle is wrong.
  Schedule s = make_schedule({ScheduleKind::k1F1B, 2, 2, 1});
  std::vector<Action>& first = s.stages[0];
  const Action recv_grad = first[find(first, {T::kRecvGradient, 0, 0, 1})];
  first.erase(first.begin() + static_cast<std::ptrdiff_t>(find(first, recv_grad)));
  first.insert(first.begin(), recv_grad);
  std::string error = validation_error(s);
  EXPECT_TRUE(contains(error, "schedule deadlocks")) << error;
  EXPECT_TRUE(contains(error, "stage 0 waits at recv-grad(mb 0, chunk 0, from stage 1)")) << error;
  EXPECT_TRUE(contains(error, "stage 1 waits at recv-act(mb 0, chunk 0, from stage 0)")) << error;
}

TEST(Validator, RejectsOutOfOrderPairing) {
  // Stage 0 runs and sends micro-batch 1 before micro-batch 0, while stage 1 receives 0 first: FIFO pairing would
  // deliver the wrong data.
  Schedule s = make_schedule({ScheduleKind::kGPipe, 2, 2, 1});
  std::vector<Action>& first = s.stages[0];
  std::swap(first[find(first, {T::kForward, 0, 0, -1})], first[find(first, {T::kForward, 1, 0, -1})]);
  std::swap(first[find(first, {T::kSendActivation, 0, 0, 1})], first[find(first, {T::kSendActivation, 1, 0, 1})]);
  std::string error = validation_error(s);
  EXPECT_TRUE(contains(error, "stage 1: recv-act(mb 0, chunk 0, from stage 0) pairs with the send of (mb 1, chunk 0)"))
      << error;
}

}  // namespace
}  // namespace braid::parallel
