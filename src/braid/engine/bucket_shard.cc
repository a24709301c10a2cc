// ZeRO's view of GradSync's buckets (grad_sync.h, "BucketShard"): the shard layout of a bucket
// plan and the shard one rank owns of a bucket. Pure.
#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "braid/base/error.h"
#include "braid/engine/grad_sync.h"

namespace braid {

namespace engine {

ShardLayout bucket_shard_layout(const BucketPlan& plan, int world_size) {
  std::vector<ShardParamInfo> infos;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(plan.param_count()), 0);
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    for (std::size_t i = 0; i < bucket.params.size(); ++i) {
      // The count is the offset gap: a bucket's params are contiguous (bucket_plan.h).
      std::int64_t end = i + 1 < bucket.params.size() ? bucket.offsets[i + 1] : bucket.elements;
      infos.push_back({.name = fmt::format("param{}", bucket.params[i]),
                       .count = end - bucket.offsets[i],
                       .element_bytes = sizeof(float),
                       .group = static_cast<int>(b)});
    }
  }
  // Alignment = element size: no padding between parameters, so the layout's offsets are the plan's.
  return plan_shard_layout(infos, {.world_size = world_size, .alignment_bytes = sizeof(float)});
}

BucketShard bucket_shard(const FlatBuffer& buffer, int rank) {
  std::int64_t s = buffer.shard_elements;
  std::int64_t used = buffer.used_elements;
  return {.shard = s,
          .begin = std::min(used, rank * s),
          .end = std::min(used, (rank + 1) * s),
          .padded = buffer.elements};
}

BucketShard bucket_shard(std::int64_t elements, int world_size, int rank) {
  if (rank < 0 || rank >= world_size) {
    throw InvalidArgument({.rank = rank, .op = "engine::bucket_shard"},
                          fmt::format("rank {} outside a world of {}", rank, world_size));
  }
  ShardParamInfo bucket{.name = "bucket", .count = elements, .element_bytes = sizeof(float)};
  ShardLayout layout = plan_shard_layout(std::span(&bucket, 1), {.world_size = world_size, .alignment_bytes = sizeof(float)});
  return bucket_shard(layout.buffers.at(0), rank);
}

}  // namespace engine

}  // namespace braid
