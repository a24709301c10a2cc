#include "braid/torch/zero_checkpoint_view.h"

#include "braid/base/check.h"
#include "braid/base/error.h"

namespace braid::torch {
namespace {

// The view's layout must cut the buffers where its owner does: else a load would write shards
// of another length than the optimizer's (an internal error, not a bad checkpoint).
void check_shards_match(const ZeroCheckpointView& view, const std::vector<std::int64_t>& owner_shard_elements) {
  engine::ShardLayout layout = view.layout();
  ErrorContext context{.rank = view.comm->rank(), .op = "zero checkpoint"};
  BRAID_CHECK(layout.buffers.size() == owner_shard_elements.size(), Mismatch, context,
              "the checkpoint's layout has {} flat buffers, the model {}", layout.buffers.size(),
              owner_shard_elements.size());
  for (std::size_t b = 0; b < layout.buffers.size(); ++b) {
    BRAID_CHECK(layout.buffers[b].shard_elements == owner_shard_elements[b], Mismatch, context,
                "flat buffer {}: the checkpoint's layout cuts shards of {} elements, the model {}", b,
                layout.buffers[b].shard_elements, owner_shard_elements[b]);
  }
}

}  // namespace

engine::ShardLayout ZeroCheckpointView::layout() const { return manifest_layout(buffers, comm->size(), alignment_bytes); }

ZeroCheckpointView checkpoint_view(ZeroOptimizer& zero) {
  DistributedDataParallel& ddp = zero.ddp();
  ZeroCheckpointView view{.comm = &ddp.communicator(), .sharding = "buckets", .alignment_bytes = sizeof(float),
                          .optimizer = &zero.inner(), .module = &ddp.module(),
                          .after_load = [&zero] { zero.gather_parameters(); }};
  std::vector<std::int64_t> shard_elements;
  for (const engine::Bucket& bucket : ddp.grad_sync().plan().buckets) {
    ManifestBucket b;
    for (int id : bucket.params) {
      auto i = static_cast<std::size_t>(id);
      b.params.push_back({.name = ddp.parameter_names()[i], .count = ddp.parameters()[i].numel()});
    }
    view.buffers.push_back(std::move(b));
  }
  for (int b = 0; b < zero.bucket_count(); ++b) {
    view.shards.push_back(zero.shard(b));
    shard_elements.push_back(zero.bucket_shard(b).shard);
  }
  check_shards_match(view, shard_elements);
  return view;
}

ZeroCheckpointView checkpoint_view(FullyShardedModule& module, const std::string& name_prefix) {
  const engine::ShardLayout& layout = module.layout();
  ZeroCheckpointView view{.comm = &module.communicator(), .sharding = "units",
                          .alignment_bytes = layout.options.alignment_bytes, .optimizer = &module.inner(),
                          .module = module.layers().ptr().get(), .buffer_prefix = name_prefix,
                          .after_load = [&module] { module.shards_written(); }};
  std::vector<std::int64_t> shard_elements;
  for (int u = 0; u < module.unit_count(); ++u) {
    const engine::FlatBuffer& buffer = layout.buffers[static_cast<std::size_t>(u)];
    ManifestBucket b;
    for (int id : buffer.params) {
      const engine::ShardParamInfo& p = layout.params[static_cast<std::size_t>(id)];
      b.params.push_back({.name = name_prefix + p.name, .count = p.count});
    }
    view.buffers.push_back(std::move(b));
    view.shards.push_back(module.shard(u));
    shard_elements.push_back(buffer.shard_elements);
  }
  check_shards_match(view, shard_elements);
  return view;
}

}  // namespace braid::torch
