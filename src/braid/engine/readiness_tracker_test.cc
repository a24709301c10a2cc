#include "braid/engine/readiness_tracker.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

BucketPlan plan_for(const std::vector<std::int64_t>& counts, std::uint64_t cap) {
  std::vector<ParamInfo> params;
  for (std::int64_t c : counts) params.push_back({.name = "p", .count = c});
  return plan_buckets(params, reverse_registration_order(static_cast<int>(counts.size())), cap);
}

// 4 params of 40, 80, 120, 160 bytes, cap 200: buckets [3], [2 1], [0].
BucketPlan small_plan() { return plan_for({10, 20, 30, 40}, 200); }

std::string error_of(ReadinessTracker& tracker, int param) {
  try {
    tracker.mark_ready(param);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no exception";
}

TEST(ReadinessTrackerTest, CompleteBucketsWaitForLowerOnes) {
  ReadinessTracker tracker(small_plan());
  EXPECT_THAT(tracker.mark_ready(0), IsEmpty());  // bucket 2 complete, waits for 0 and 1
  EXPECT_TRUE(tracker.bucket_complete(2));
  EXPECT_THAT(tracker.mark_ready(1), IsEmpty());
  EXPECT_THAT(tracker.mark_ready(2), IsEmpty());  // bucket 1 complete, waits for 0
  EXPECT_EQ(tracker.launched_buckets(), 0);
  EXPECT_THAT(tracker.mark_ready(3), ElementsAre(0, 1, 2));
  EXPECT_TRUE(tracker.all_ready());
  EXPECT_THAT(tracker.observed_order(), ElementsAre(0, 1, 2, 3));
}

TEST(ReadinessTrackerTest, ExpectedOrderLaunchesEachBucketAtItsLastParam) {
  ReadinessTracker tracker(small_plan());
  EXPECT_THAT(tracker.mark_ready(3), ElementsAre(0));
  EXPECT_THAT(tracker.mark_ready(2), IsEmpty());
  EXPECT_THAT(tracker.mark_ready(1), ElementsAre(1));
  EXPECT_THAT(tracker.mark_ready(0), ElementsAre(2));
  EXPECT_EQ(tracker.launched_buckets(), 3);
}

// The property GradSync's ordering contract rests on, for random plans and readiness orders:
// buckets launch in the sequence 0, 1, 2, ..., each exactly once, never before all its params
// are ready, and never later than necessary (as soon as it and every lower bucket are complete).
TEST(ReadinessTrackerTest, RandomReadinessOrdersAlwaysLaunchInIndexOrder) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 1000; ++trial) {
    int n = static_cast<int>(rng() % 30);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(n));
    for (auto& c : counts) c = rng() % 5 == 0 ? 0 : static_cast<std::int64_t>(rng() % 1000);
    BucketPlan plan = plan_for(counts, 1 + rng() % 3000);
    ReadinessTracker tracker(plan);
    for (int step = 0; step < 2; ++step) {  // the second step checks reset()
      std::vector<int> readiness(static_cast<std::size_t>(n));
      std::iota(readiness.begin(), readiness.end(), 0);
      std::shuffle(readiness.begin(), readiness.end(), rng);
      std::vector<bool> marked(static_cast<std::size_t>(n), false);
      std::vector<int> launched;
      for (int param : readiness) {
        marked[static_cast<std::size_t>(param)] = true;
        for (int b : tracker.mark_ready(param)) {
          ASSERT_EQ(b, static_cast<int>(launched.size())) << "trial " << trial;
          for (int p : plan.buckets[static_cast<std::size_t>(b)].params) ASSERT_TRUE(marked[static_cast<std::size_t>(p)]);
          launched.push_back(b);
        }
        // As soon as possible: the launched prefix is the longest prefix of complete buckets.
        std::size_t complete_prefix = 0;
        while (complete_prefix < plan.buckets.size() &&
               std::all_of(plan.buckets[complete_prefix].params.begin(), plan.buckets[complete_prefix].params.end(),
                           [&](int p) { return marked[static_cast<std::size_t>(p)]; })) {
          ++complete_prefix;
        }
        ASSERT_EQ(launched.size(), complete_prefix) << "trial " << trial;
      }
      EXPECT_EQ(launched.size(), plan.buckets.size());
      EXPECT_TRUE(tracker.all_ready());
      EXPECT_THAT(tracker.unready_params(), IsEmpty());
      EXPECT_EQ(tracker.observed_order(), readiness);
      tracker.reset();
    }
  }
}

TEST(ReadinessTrackerTest, RebuildingFromTheObservedOrderRemovesWaiting) {
  // Why GradSync rebuilds: with a plan built from the order gradients really arrive, every
  // bucket launches at the moment its own last param is marked.
  std::vector<ParamInfo> params;
  for (int i = 0; i < 12; ++i) params.push_back({.name = "p", .count = 10 + i});
  std::vector<int> actual{4, 0, 9, 11, 1, 7, 3, 10, 2, 5, 8, 6};
  BucketPlan rebuilt = plan_buckets(params, actual, 100);
  ASSERT_GT(rebuilt.buckets.size(), 3u);
  ReadinessTracker tracker(rebuilt);
  for (int param : actual) {
    const Bucket& bucket = rebuilt.buckets[static_cast<std::size_t>(rebuilt.bucket_of[static_cast<std::size_t>(param)])];
    std::vector<int> expected;
    if (bucket.params.back() == param) expected.push_back(rebuilt.bucket_of[static_cast<std::size_t>(param)]);
    EXPECT_EQ(tracker.mark_ready(param), expected) << "param " << param;
  }
}

TEST(ReadinessTrackerTest, RejectsOutOfRangeAndDoubleMarksWithoutChangingState) {
  ReadinessTracker tracker(small_plan());
  EXPECT_THAT(error_of(tracker, 4), HasSubstr("param 4 is out of range (the model has 4 params)"));
  EXPECT_THAT(error_of(tracker, -1), HasSubstr("param -1 is out of range"));
  EXPECT_THAT(tracker.mark_ready(3), ElementsAre(0));
  EXPECT_THAT(error_of(tracker, 3), HasSubstr("param 3 was already marked ready this step"));
  EXPECT_THAT(tracker.observed_order(), ElementsAre(3));
  EXPECT_THAT(tracker.unready_params(), ElementsAre(0, 1, 2));
  EXPECT_EQ(tracker.launched_buckets(), 1);
}

TEST(ReadinessTrackerTest, CompleteUnreadyLaunchesTheRestInOrder) {
  ReadinessTracker tracker(small_plan());
  EXPECT_THAT(tracker.mark_ready(1), IsEmpty());
  EXPECT_THAT(tracker.unready_params(), ElementsAre(0, 2, 3));
  EXPECT_FALSE(tracker.all_ready());
  EXPECT_THAT(tracker.complete_unready(), ElementsAre(0, 1, 2));
  EXPECT_TRUE(tracker.all_ready());
  EXPECT_THAT(tracker.unready_params(), IsEmpty());
  // The unready ones are appended in plan order (buckets [3], [2 1], [0]).
  EXPECT_THAT(tracker.observed_order(), ElementsAre(1, 3, 2, 0));
  EXPECT_THAT(tracker.complete_unready(), IsEmpty());

  tracker.reset();
  EXPECT_THAT(tracker.mark_ready(3), ElementsAre(0));   // bucket 0 already launched:
  EXPECT_THAT(tracker.complete_unready(), ElementsAre(1, 2));  // only the rest come back
}

TEST(ReadinessTrackerTest, ResetStartsAFreshStep) {
  ReadinessTracker tracker(small_plan());
  for (int p : {3, 2, 1, 0}) tracker.mark_ready(p);
  ASSERT_TRUE(tracker.all_ready());
  tracker.reset();
  EXPECT_FALSE(tracker.all_ready());
  EXPECT_EQ(tracker.launched_buckets(), 0);
  EXPECT_THAT(tracker.observed_order(), IsEmpty());
  EXPECT_THAT(tracker.unready_params(), ElementsAre(0, 1, 2, 3));
  EXPECT_FALSE(tracker.bucket_complete(0));
  EXPECT_THAT(tracker.mark_ready(3), ElementsAre(0));  // may be marked again
}

TEST(ReadinessTrackerTest, ABucketOutOfRangeIsInvalidArgumentNotOutOfRange) {
  ReadinessTracker tracker(small_plan());
  EXPECT_THROW(tracker.bucket_complete(tracker.bucket_count()), InvalidArgument);
  EXPECT_THROW(tracker.bucket_complete(-1), InvalidArgument);
}

TEST(ReadinessTrackerTest, EmptyModelIsReadyAtOnce) {
  ReadinessTracker tracker(plan_for({}, 100));
  EXPECT_TRUE(tracker.all_ready());
  EXPECT_EQ(tracker.bucket_count(), 0);
  EXPECT_THAT(tracker.complete_unready(), IsEmpty());
  EXPECT_THAT(error_of(tracker, 0), HasSubstr("out of range"));
}

TEST(ReadinessTrackerTest, RejectsInconsistentPlans) {
  BucketPlan empty_bucket = small_plan();
  empty_bucket.buckets.push_back({});
  EXPECT_THROW(ReadinessTracker{empty_bucket}, InvalidArgument);
  BucketPlan twice = small_plan();
  twice.buckets[1].params = {2, 2};  // param 1 is no longer listed anywhere
  EXPECT_THROW(ReadinessTracker{twice}, InvalidArgument);
  BucketPlan misplaced = small_plan();
  misplaced.bucket_of[0] = 1;
  EXPECT_THROW(ReadinessTracker{misplaced}, InvalidArgument);
  BucketPlan missing = small_plan();
  missing.buckets.pop_back();
  EXPECT_THROW(ReadinessTracker{missing}, InvalidArgument);
}

}  // namespace
}  // namespace braid::engine
