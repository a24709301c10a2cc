#include "braid/torch/distributed_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

std::vector<std::int64_t> all_shards(std::int64_t n, int world, SamplerOptions options, std::int64_t epoch) {
  std::vector<std::int64_t> all;
  for (int r = 0; r < world; ++r) {
    auto shard = DistributedSampler(n, world, r, options).shard(epoch);
    EXPECT_EQ(static_cast<std::int64_t>(shard.size()), DistributedSampler(n, world, r, options).shard_size());
    all.insert(all.end(), shard.begin(), shard.end());
  }
  return all;
}

TEST(DistributedSampler, ShardsCoverTheDatasetExactlyOnceWhenTheWorldDividesIt) {
  for (int world : {1, 2, 3, 4, 5}) {
    std::int64_t n = 60;
    for (bool drop_last : {false, true}) {
      auto all = all_shards(n, world, {.seed = 7, .drop_last = drop_last}, 3);
      std::sort(all.begin(), all.end());
      std::vector<std::int64_t> expected(static_cast<std::size_t>(n));
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(all, expected) << "world " << world;
    }
  }
}

TEST(DistributedSampler, PaddingRepeatsFewerThanWorldSamplesAndDropLastSkipsFewerThanWorld) {
  std::int64_t n = 103;
  for (int world : {2, 3, 4, 5}) {
    auto padded = all_shards(n, world, {.seed = 1}, 0);
    std::set<std::int64_t> distinct(padded.begin(), padded.end());
    EXPECT_EQ(static_cast<std::int64_t>(distinct.size()), n);  // everything seen
    EXPECT_EQ(static_cast<std::int64_t>(padded.size()), (n + world - 1) / world * world);
    auto dropped = all_shards(n, world, {.seed = 1, .drop_last = true}, 0);
    std::set<std::int64_t> unique(dropped.begin(), dropped.end());
    EXPECT_EQ(unique.size(), dropped.size());  // nothing twice
    EXPECT_EQ(static_cast<std::int64_t>(dropped.size()), n / world * world);
  }
}

TEST(DistributedSampler, RanksTogetherSeeTheGlobalBatchesOfOneProcess) {
  // Batch t of every rank (per-rank batch b) together is perm[t*b*world, (t+1)*b*world).
  std::int64_t n = 96, b = 4;
  int world = 3;
  SamplerOptions options{.seed = 11};
  auto perm = DistributedSampler(n, 1, 0, options).permutation(2);
  for (std::int64_t t = 0; t < n / (b * world); ++t) {
    std::multiset<std::int64_t> together;
    for (int r = 0; r < world; ++r) {
      auto shard = DistributedSampler(n, world, r, options).shard(2);
      together.insert(shard.begin() + t * b, shard.begin() + (t + 1) * b);
    }
    std::multiset<std::int64_t> global(perm.begin() + t * b * world, perm.begin() + (t + 1) * b * world);
    EXPECT_EQ(together, global) << "batch " << t;
  }
}

TEST(DistributedSampler, ShuffleDependsOnSeedAndEpochOnly) {
  DistributedSampler a(1000, 2, 0, {.seed = 5}), b(1000, 2, 1, {.seed = 5}), c(1000, 2, 0, {.seed = 6});
  EXPECT_EQ(a.permutation(4), b.permutation(4));  // every rank agrees
  EXPECT_NE(a.permutation(4), a.permutation(5));  // a new order each epoch
  EXPECT_NE(a.permutation(4), c.permutation(4));
  auto identity = DistributedSampler(10, 2, 0, {.shuffle = false}).shard(0);
  EXPECT_EQ(identity, (std::vector<std::int64_t>{0, 2, 4, 6, 8}));
}

TEST(DistributedSampler, RejectsADatasetSmallerThanTheWorldAndBadRanks) {
  EXPECT_THROW(DistributedSampler(3, 4, 0), InvalidArgument);
  EXPECT_THROW(DistributedSampler(10, 0, 0), InvalidArgument);
  EXPECT_THROW(DistributedSampler(10, 2, 2), InvalidArgument);
  EXPECT_THROW(DistributedSampler(10, 2, -1), InvalidArgument);
  try {
    DistributedSampler(3, 4, 1);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("3 samples, fewer than the 4 ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::torch
