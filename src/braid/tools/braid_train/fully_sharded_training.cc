#include "braid/tools/braid_train/fully_sharded_training.h"

#include "braid/tools/braid_train/training_common.h"
#include "braid/tools/braid_train/mixed_precision_training.h"
#include "braid/tools/braid_train/zero_pp.h"

namespace braid::train {

torch::FullyShardedOptions fully_sharded_options(const TrainConfig& config) {
  ZeroPlusPlus zero_pp = parse_zero_pp(config.zero_pp, 3);  // qwZ and qgZ per unit
  // --precision bf16|fp16 (refused with --zero-pp): both collectives of every unit in 16 bits,
  // gathered from the exact fp32 shards.
  compress::CodecId wire = plan_precision(config).wire;
  return {.max_gathered_units = config.max_gathered_units,
          .weight_codec = zero_pp.weight_codec(wire),
          .gradient_codec = zero_pp.gradient_codec(wire),
          .hierarchical_partition = zero_pp.hpz};
}

std::unique_ptr<torch::FullyShardedModule> make_fully_sharded(Communicator& comm, const TrainConfig& config,
                                                              TrainModel& model) {
  ::torch::nn::Sequential layers = model.layers();
  return std::make_unique<torch::FullyShardedModule>(
      comm, layers, torch::units_of_layers_with_parameters(layers),
      [&config](std::vector<::torch::Tensor> shards) { return make_optimizer(config, std::move(shards)); },
      fully_sharded_options(config));
}

GradSyncStats stage3_stats(const torch::FullyShardedStepStats& step) {
  GradSyncStats stats;
  stats.wire.wire_bytes = step.wire_bytes;
  stats.wire.dense_wire_bytes = step.dense_wire_bytes;
  stats.exposed_seconds = step.seconds_waiting;
  return stats;
}

RunSummary::Gathers gather_report(torch::FullyShardedModule& module) {
  const parallel::GatherCounters& c = module.counters();
  RunSummary::Gathers g{.units = module.unit_count(), .cap = module.max_gathered_units(), .max_gathered = c.max_gathered,
                        .peak_gathered_bytes = c.peak_gathered_bytes, .allgathers = c.allgathers,
                        .reduce_scatters = c.reduce_scatters, .pool_bytes = module.pool_bytes(),
                        .host_allgathers = module.host_allgathers()};
  for (int u = 0; u < module.unit_count(); ++u) g.storage_bytes_after_step += module.unit_storage_bytes(u);
  return g;
}

}  // namespace braid::train
