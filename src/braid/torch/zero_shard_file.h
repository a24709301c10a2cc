// The files of a sharded ZeRO checkpoint (zero_checkpoint.h) other than its manifest: one per
// rank with its shards, and rank 0's with the module's buffers. LibTorch archives with a CRC32C
// per tensor (checked_archive.h):
//
//   zero-<g>-rank<r>.pt   "header" int64 {format, generation, rank, world size, buckets};
//                         per flat buffer b (a bucket of stages 1-2, a unit of stage 3) whose
//                         shard holds real elements on rank r: "bucket<b>.param" (its elements
//                         [begin, end) = [min(E, r S), min(E, (r+1) S)), engine::bucket_shard;
//                         stage 3's alignment gaps included, as zeros), "bucket<b>.state" int64
//                         {present, step}, and with state "bucket<b>.<name>" per state tensor
//                         (zero_optimizer_state.h state_tensor_names), each of the same length.
//   zero-<g>-buffers.pt   "buffer.<prefix><name>" per named buffer of the module.
//
// The readers check, before returning anything, that the file exists and has the manifest's
// size, that every tensor matches its CRC32C, and that the header and the lengths are those the
// saved layout implies: any failure is Corrupt naming the file (and the tensor).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "braid/base/error.h"
#include "braid/engine/shard_layout.h"
#include "braid/torch/zero_checkpoint_view.h"
#include "braid/torch/zero_optimizer_state.h"

namespace braid::torch {

// One bucket's shard as saved: the real parameter elements and the optimizer state over them.
struct SavedShard {
  ::torch::Tensor param;
  ShardState state;
};

std::string encode_shard_file(const ZeroCheckpointView& view, const std::string& kind, std::int64_t generation);

// Rank `rank`'s shards of the saved layout `from`, by bucket (those with real elements).
std::map<int, SavedShard> read_shard_file(const std::string& path, std::int64_t bytes, const engine::ShardLayout& from,
                                          int rank, std::int64_t generation, const std::string& kind,
                                          const ErrorContext& context);

// `prefix` goes before every buffer's name (ZeroCheckpointView::buffer_prefix).
std::string encode_buffers_file(::torch::nn::Module& module, const std::string& prefix);

// (the module's buffer, its saved value) for every named buffer. InvalidArgument when a saved
// buffer has another shape or dtype (another model).
std::vector<std::pair<::torch::Tensor, ::torch::Tensor>> read_buffers_file(const std::string& path, std::int64_t bytes,
                                                                           ::torch::nn::Module& module,
                                                                           const std::string& prefix,
                                                                           const ErrorContext& context);

}  // namespace braid::torch
