#include "braid/engine/bucket_plan.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::uint64_t kMiB = 1 << 20;

std::vector<ParamInfo> f32_params(const std::vector<std::int64_t>& counts) {
  std::vector<ParamInfo> params;
  for (std::size_t i = 0; i < counts.size(); ++i) params.push_back({.name = fmt::format("p{}", i), .count = counts[i]});
  return params;
}

std::uint64_t bytes_of(const ParamInfo& p) { return static_cast<std::uint64_t>(p.count) * p.element_bytes; }

// Every property the file comment of bucket_plan.h promises, for one plan.
void expect_valid_plan(std::span<const ParamInfo> params, std::span<const int> order, std::uint64_t cap,
                       const BucketPlan& plan) {
  SCOPED_TRACE(describe(plan));
  ASSERT_EQ(plan.cap_bytes, cap);
  ASSERT_EQ(plan.bucket_of.size(), params.size());
  ASSERT_EQ(plan.slot_of.size(), params.size());
  std::vector<int> concatenated;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    ASSERT_FALSE(bucket.params.empty()) << "bucket " << b;
    ASSERT_EQ(bucket.offsets.size(), bucket.params.size());
    std::int64_t offset = 0;
    int nonzero = 0;
    for (std::size_t s = 0; s < bucket.params.size(); ++s) {
      int id = bucket.params[s];
      EXPECT_EQ(plan.bucket_of[static_cast<std::size_t>(id)], static_cast<int>(b));
      EXPECT_EQ(plan.slot_of[static_cast<std::size_t>(id)], static_cast<int>(s));
      EXPECT_EQ(bucket.offsets[s], offset) << "offsets must be contiguous";
      EXPECT_EQ(params[static_cast<std::size_t>(id)].element_bytes, params[static_cast<std::size_t>(bucket.params[0])].element_bytes);
      offset += params[static_cast<std::size_t>(id)].count;
      nonzero += params[static_cast<std::size_t>(id)].count > 0;
      concatenated.push_back(id);
    }
    EXPECT_EQ(bucket.elements, offset);
    EXPECT_EQ(bucket.bytes, static_cast<std::uint64_t>(offset) * params[static_cast<std::size_t>(bucket.params[0])].element_bytes);
    if (bucket.bytes > cap) {
      EXPECT_EQ(nonzero, 1) << "only a single oversize param may exceed the cap";
    }
    if (b > 0) {
      // Greedy: a bucket is opened only because its first param did not fit in the previous one.
      const ParamInfo& first = params[static_cast<std::size_t>(bucket.params[0])];
      const Bucket& previous = plan.buckets[b - 1];
      bool element_change = first.element_bytes != params[static_cast<std::size_t>(previous.params[0])].element_bytes;
      EXPECT_TRUE(element_change || (first.count > 0 && previous.bytes + bytes_of(first) > cap)) << "bucket " << b;
    }
  }
  EXPECT_TRUE(std::equal(concatenated.begin(), concatenated.end(), order.begin(), order.end()))
      << "buckets must list every param once, in the given order";
}

TEST(BucketPlanTest, PacksInOrderAndClosesBeforeExceedingTheCap) {
  auto params = f32_params({10, 20, 30, 40});  // 40, 80, 120, 160 bytes
  std::vector<int> order = reverse_registration_order(4);
  BucketPlan plan = plan_buckets(params, order, 200);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_THAT(plan.buckets[0].params, ElementsAre(3));           // 160 + 120 > 200
  EXPECT_THAT(plan.buckets[1].params, ElementsAre(2, 1));        // 120 + 80 = 200: exactly the cap fits
  EXPECT_THAT(plan.buckets[1].offsets, ElementsAre(0, 30));
  EXPECT_THAT(plan.buckets[2].params, ElementsAre(0));
  EXPECT_EQ(plan.buckets[1].elements, 50);
  EXPECT_EQ(plan.buckets[1].bytes, 200u);
  EXPECT_THAT(plan.bucket_of, ElementsAre(2, 1, 1, 0));
  EXPECT_THAT(plan.slot_of, ElementsAre(0, 1, 0, 0));
  expect_valid_plan(params, order, 200, plan);
}

TEST(BucketPlanTest, OversizeParamGetsABucketOfItsOwn) {
  auto params = f32_params({1000, 1, 1});
  std::vector<int> first{0, 1, 2};
  BucketPlan a = plan_buckets(params, first, 100);
  ASSERT_EQ(a.buckets.size(), 2u);
  EXPECT_THAT(a.buckets[0].params, ElementsAre(0));
  EXPECT_THAT(a.buckets[1].params, ElementsAre(1, 2));
  std::vector<int> middle{1, 0, 2};
  BucketPlan b = plan_buckets(params, middle, 100);
  ASSERT_EQ(b.buckets.size(), 3u);
  EXPECT_THAT(b.buckets[1].params, ElementsAre(0));
  EXPECT_EQ(b.buckets[1].bytes, 4000u);
}

TEST(BucketPlanTest, AloneParamsTravelInBucketsOfTheirOwn) {
  // Biases pack together; each matrix (alone: PowerSGD compresses it as a matrix) gets its own.
  auto params = f32_params({10, 100, 10, 100, 10});
  params[1].alone = params[3].alone = true;
  std::vector<int> order{4, 3, 2, 1, 0};
  BucketPlan plan = plan_buckets(params, order, 1 << 20);
  ASSERT_EQ(plan.buckets.size(), 5u);
  EXPECT_THAT(plan.buckets[0].params, ElementsAre(4));
  EXPECT_THAT(plan.buckets[1].params, ElementsAre(3));
  EXPECT_THAT(plan.buckets[2].params, ElementsAre(2));
  EXPECT_THAT(plan.buckets[3].params, ElementsAre(1));
  params[1].alone = params[3].alone = false;
  EXPECT_EQ(plan_buckets(params, order, 1 << 20).buckets.size(), 1u);
  expect_valid_plan(params, order, 1 << 20, plan_buckets(params, order, 1 << 20));
}

TEST(BucketPlanTest, ZeroSizeParamsJoinTheOpenBucket) {
  auto params = f32_params({0, 5, 0, 0, 5, 0, 1000, 0});
  std::vector<int> order(params.size());
  std::iota(order.begin(), order.end(), 0);
  BucketPlan plan = plan_buckets(params, order, 20);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_THAT(plan.buckets[0].params, ElementsAre(0, 1, 2, 3));  // 20 bytes: full, zeros still join
  EXPECT_THAT(plan.buckets[0].offsets, ElementsAre(0, 0, 5, 5));
  EXPECT_THAT(plan.buckets[1].params, ElementsAre(4, 5));
  EXPECT_THAT(plan.buckets[2].params, ElementsAre(6, 7));        // a zero joins even an oversize bucket
  expect_valid_plan(params, order, 20, plan);

  auto zeros = f32_params({0, 0, 0});
  std::vector<int> reverse = reverse_registration_order(3);
  BucketPlan all_zero = plan_buckets(zeros, reverse, 1);
  ASSERT_EQ(all_zero.buckets.size(), 1u);
  EXPECT_THAT(all_zero.buckets[0].params, ElementsAre(2, 1, 0));
  EXPECT_EQ(all_zero.buckets[0].elements, 0);
}

TEST(BucketPlanTest, EmptyModelHasNoBuckets) {
  BucketPlan plan = plan_buckets({}, {}, 25 * kMiB);
  EXPECT_TRUE(plan.buckets.empty());
  EXPECT_EQ(plan.param_count(), 0);
  EXPECT_EQ(describe(plan), "0 buckets, cap 26214400 bytes, 0 params\n");
}

TEST(BucketPlanTest, ElementSizeChangeClosesTheBucket) {
  std::vector<ParamInfo> params{{.name = "a", .count = 2}, {.name = "b", .count = 2, .element_bytes = 2},
                                {.name = "c", .count = 2, .element_bytes = 2}, {.name = "d", .count = 2}};
  std::vector<int> order{0, 1, 2, 3};
  BucketPlan plan = plan_buckets(params, order, kMiB);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_THAT(plan.buckets[1].params, ElementsAre(1, 2));
  EXPECT_EQ(plan.buckets[1].bytes, 8u);
  expect_valid_plan(params, order, kMiB, plan);
}

TEST(BucketPlanTest, RandomModelsSatisfyEveryProperty) {
  std::mt19937_64 rng(20240605);
  for (int trial = 0; trial < 2000; ++trial) {
    int n = static_cast<int>(rng() % 40);
    std::vector<ParamInfo> params(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto& p = params[static_cast<std::size_t>(i)];
      p.name = fmt::format("p{}", i);
      switch (rng() % 4) {
        case 0: p.count = 0; break;                                   // zero-size
        case 1: p.count = static_cast<std::int64_t>(rng() % 8); break;  // tiny (biases)
        case 2: p.count = static_cast<std::int64_t>(rng() % 5000); break;
        default: p.count = static_cast<std::int64_t>(rng() % 200000); break;  // often oversize
      }
      p.element_bytes = trial % 3 == 0 ? std::size_t{1} << (rng() % 4) : 4;  // mixed sizes in a third
    }
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::uint64_t cap = 1 + rng() % (trial % 2 ? 4096 : 400000);
    BucketPlan plan = plan_buckets(params, order, cap);
    expect_valid_plan(params, order, cap, plan);
    EXPECT_EQ(plan, plan_buckets(params, order, cap)) << "planning must be deterministic";
    if (::testing::Test::HasFailure()) FAIL() << "trial " << trial;
  }
}

TEST(BucketPlanTest, EqualityAndDescribeDistinguishPlans) {
  auto params = f32_params({100, 200, 300});
  std::vector<int> reverse = reverse_registration_order(3);
  std::vector<int> forward{0, 1, 2};
  BucketPlan a = plan_buckets(params, reverse, 1200);
  EXPECT_EQ(a, plan_buckets(params, reverse, 1200));
  EXPECT_NE(a, plan_buckets(params, forward, 1200));
  EXPECT_NE(a, plan_buckets(params, reverse, 1201));  // same buckets, another cap
  EXPECT_EQ(describe(a),
            "2 buckets, cap 1200 bytes, 3 params\n"
            "bucket 0: 300 elements, 1200 bytes, params [2]\n"
            "bucket 1: 300 elements, 1200 bytes, params [1 0]\n");
}

TEST(BucketPlanTest, RejectsBadOrdersCapsAndCounts) {
  auto params = f32_params({1, 2, 3});
  auto message = [&](std::vector<int> order, std::uint64_t cap = 100) {
    try {
      plan_buckets(params, order, cap);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_THAT(message({0, 1}), HasSubstr("order lists 2 params but the model has 3"));
  EXPECT_THAT(message({0, 1, 1}), HasSubstr("order[2] = 1 repeats"));
  EXPECT_THAT(message({0, 3, 1}), HasSubstr("order[1] = 3 is not a param id"));
  EXPECT_THAT(message({-1, 0, 1}), HasSubstr("order[0] = -1"));
  EXPECT_THAT(message({0, 1, 2}, 0), HasSubstr("cap must be positive"));

  std::vector<int> order{0, 1, 2};
  params[1].count = -4;
  EXPECT_THAT(message(order), HasSubstr("param 1 ('p1') has a negative count -4"));
  params[1].count = 2;
  params[2].element_bytes = 0;
  EXPECT_THAT(message(order), HasSubstr("zero element size"));
  params[2].element_bytes = 8;
  params[2].count = std::numeric_limits<std::int64_t>::max() / 4;
  EXPECT_THAT(message(order), HasSubstr("overflow"));
  params[2].count = std::numeric_limits<std::int64_t>::max() / 8;  // fits alone, not with the others
  EXPECT_THAT(message(order), HasSubstr("total byte size overflows"));
  EXPECT_THROW(reverse_registration_order(-1), InvalidArgument);
  EXPECT_NO_THROW(check_permutation(std::vector<int>{2, 0, 1}, 3));
  EXPECT_THROW(check_permutation(std::vector<int>{2, 0, 1}, 4), InvalidArgument);
}

TEST(BucketPlanTest, ReverseRegistrationOrder) {
  EXPECT_TRUE(reverse_registration_order(0).empty());
  EXPECT_THAT(reverse_registration_order(4), ElementsAre(3, 2, 1, 0));
}

TEST(BucketPlanTest, AutoCapFollowsTheSeedRule) {
  // max(4 MiB, P / (16 N)), ../shared/seeds/002.
  EXPECT_EQ(auto_bucket_bytes(0, 1), 4 * kMiB);
  EXPECT_EQ(auto_bucket_bytes(100 * kMiB, 2), 4 * kMiB);          // 3.125 MiB -> the floor
  EXPECT_EQ(auto_bucket_bytes(1024 * kMiB, 16), 4 * kMiB);        // exactly the floor
  EXPECT_EQ(auto_bucket_bytes(1024 * kMiB, 8), 8 * kMiB);
  EXPECT_EQ(auto_bucket_bytes(1024 * kMiB, 2), 32 * kMiB);
  EXPECT_EQ(auto_bucket_bytes(1024 * kMiB, 1), 64 * kMiB);
  EXPECT_EQ(auto_bucket_bytes(1024 * kMiB + 17, 1), 64 * kMiB + 1);  // integer division
  EXPECT_THROW(auto_bucket_bytes(kMiB, 0), InvalidArgument);
}

TEST(BucketPlanTest, ParsesCapsInMiBOrAuto) {
  EXPECT_EQ(parse_bucket_cap("25", 0, 1), 25 * kMiB);
  EXPECT_EQ(parse_bucket_cap("4", 0, 1), 4 * kMiB);
  EXPECT_EQ(parse_bucket_cap("1", 0, 1), kMiB);
  EXPECT_EQ(parse_bucket_cap("0.5", 0, 1), kMiB / 2);
  EXPECT_EQ(parse_bucket_cap("auto", 1024 * kMiB, 2), 32 * kMiB);
  EXPECT_EQ(parse_bucket_cap("auto", 0, 4), 4 * kMiB);
  for (const char* bad : {"", "0", "-1", "abc", "25MB", " 25", "25 ", "nan", "inf", "1e300", "AUTO", "auto ",
                          "0.0000001"}) {
    EXPECT_THROW(parse_bucket_cap(bad, kMiB, 2), InvalidArgument) << "'" << bad << "'";
  }
  EXPECT_THROW(parse_bucket_cap("auto", kMiB, 0), InvalidArgument);
}

}  // namespace
}  // namespace braid::engine
