// ZeRO's bucket shards (grad_sync.h: engine::bucket_shard, engine::bucket_shard_layout): the
// shard arithmetic GradSync's reduce-scatter and a ZeRO optimizer agree on, without ranks.
#include <algorithm>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/engine/bucket_plan.h"
#include "braid/engine/grad_sync.h"

namespace braid::engine {
namespace {

TEST(BucketShardTest, ExamplesByHand) {
  // 10 elements on 4 ranks: shards of 3, padded to 12; rank 3 holds one real element.
  EXPECT_EQ(bucket_shard(10, 4, 0), (BucketShard{.shard = 3, .begin = 0, .end = 3, .padded = 12}));
  EXPECT_EQ(bucket_shard(10, 4, 3), (BucketShard{.shard = 3, .begin = 9, .end = 10, .padded = 12}));
  // 2 elements on 4 ranks: ranks 2 and 3 hold only padding (empty, at the end).
  EXPECT_EQ(bucket_shard(2, 4, 1), (BucketShard{.shard = 1, .begin = 1, .end = 2, .padded = 4}));
  EXPECT_EQ(bucket_shard(2, 4, 3), (BucketShard{.shard = 1, .begin = 2, .end = 2, .padded = 4}));
  // Nothing to shard.
  EXPECT_EQ(bucket_shard(0, 3, 2), (BucketShard{.shard = 0, .begin = 0, .end = 0, .padded = 0}));
  // One rank owns everything, unpadded.
  EXPECT_EQ(bucket_shard(7, 1, 0), (BucketShard{.shard = 7, .begin = 0, .end = 7, .padded = 7}));
}

// Over a grid of sizes and worlds: equal shards of ceil(E / n), the real parts partition
// [0, E) in rank order, and the padding is less than one element per rank.
TEST(BucketShardTest, ShardsPartitionTheBucketWithLessThanOneElementOfPaddingPerRank) {
  for (std::int64_t elements : {0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 1000, 300001}) {
    for (int n = 1; n <= 9; ++n) {
      std::int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(fmt::format("{} elements, rank {} of {}", elements, r, n));
        BucketShard s = bucket_shard(elements, n, r);
        EXPECT_EQ(s.shard, (elements + n - 1) / n);
        EXPECT_EQ(s.padded, n * s.shard);
        EXPECT_LT(s.padded - elements, n);
        EXPECT_GE(s.padded, elements);
        EXPECT_EQ(s.begin, next);
        EXPECT_LE(s.begin, s.end);
        EXPECT_LE(s.end - s.begin, s.shard);
        EXPECT_EQ(s.begin, std::min(elements, r * s.shard));
        next = s.end;
      }
      EXPECT_EQ(next, elements);
    }
  }
}

TEST(BucketShardTest, RefusesBadArguments) {
  EXPECT_THROW(bucket_shard(10, 0, 0), InvalidArgument);
  EXPECT_THROW(bucket_shard(10, 4, 4), InvalidArgument);
  EXPECT_THROW(bucket_shard(10, 4, -1), InvalidArgument);
  EXPECT_THROW(bucket_shard(-1, 4, 0), InvalidArgument);
}

// The layout GradSync uses: one flat buffer per bucket with the plan's offsets (no padding
// between parameters), the same shards as bucket_shard, and pieces that cover every
// parameter's elements exactly once.
TEST(BucketShardTest, LayoutOfAPlanKeepsTheBucketOffsets) {
  std::vector<std::int64_t> counts = {1000, 0, 3, 37, 300000, 1, 5, 2, 70000, 11};
  std::vector<ParamInfo> params;
  for (std::size_t i = 0; i < counts.size(); ++i) params.push_back({.name = fmt::format("p{}", i), .count = counts[i]});
  BucketPlan plan = plan_buckets(params, reverse_registration_order(static_cast<int>(params.size())), 1 << 20);
  ASSERT_GE(plan.buckets.size(), 2u);
  for (int n : {1, 2, 3, 4, 7}) {
    ShardLayout layout = bucket_shard_layout(plan, n);
    ASSERT_EQ(layout.buffers.size(), plan.buckets.size());
    std::int64_t covered = 0;
    for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
      SCOPED_TRACE(fmt::format("bucket {} on {} ranks", b, n));
      const FlatBuffer& flat = layout.buffers[b];
      EXPECT_EQ(flat.offsets, plan.buckets[b].offsets);
      EXPECT_EQ(flat.used_elements, plan.buckets[b].elements);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(bucket_shard(flat, r), bucket_shard(plan.buckets[b].elements, n, r));
        for (const ShardPiece& piece : flat.shard_pieces[static_cast<std::size_t>(r)]) covered += piece.length;
      }
    }
    EXPECT_EQ(covered, std::accumulate(counts.begin(), counts.end(), std::int64_t{0}));
  }
}

}  // namespace
}  // namespace braid::engine
