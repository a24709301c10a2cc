// What braid-train's pipeline trainers (mesh_trainer.cc, moe_gpt_pipeline.cc) share about the
// model's Sequential cut into stages: the layers' weights for the balanced partition, the
// stage's layers as one module, and every stage's trained layers back on every rank.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/parallel/layer_partition.h"

namespace braid::train {

// Parameter counts per layer (+1, so that a parameter-free layer still weighs something and
// every piece gets work to do).
std::vector<std::int64_t> layer_weights(::torch::nn::Sequential& layers);

// The stage's layers (model indices `owned`) as one module, registered as "layer<i>", so that
// DistributedDataParallel can average their gradients and a checkpoint save them.
std::shared_ptr<::torch::nn::Module> stage_module(::torch::nn::Sequential& layers, const std::vector<int>& owned);

// Collective over `pipeline` (rank s = stage s): every piece's parameters and buffers broadcast
// from the stage that trains it, so every rank of the pipeline holds the whole trained model.
// `sixteen_bit`: the parameters are bf16 and travel as fp32 (exact), as ZeRO-3's bf16 storage
// keeps them.
void share_stage_layers(Communicator& pipeline, ::torch::nn::Sequential& layers, const parallel::LayerPartition& partition,
                        bool sixteen_bit = false);

}  // namespace braid::train
