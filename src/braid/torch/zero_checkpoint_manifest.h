// The manifest of a sharded ZeRO checkpoint (zero_checkpoint.h): what a loader must know
// before it opens a shard. Written by rank 0 after every shard file is on disk; its rename is
// the checkpoint's commit point. JSON, readable by a person:
//
//   {"body": {"format": 2, "generation": 7, "world_size": 4, "optimizer": "adam",
//             "sharding": "buckets", "alignment_bytes": 4,
//             "fingerprint": "model=gpt batch=24 ...", "position": {"step": 3, "epoch": 0, "batch_in_epoch": 3},
//             "buckets": [{"elements": 1221234, "params": [{"name": "head.weight", "count": 8320}, ...]}],
//             "shards": [{"file": "zero-7-rank0.pt", "bytes": 2443312}, ...],
//             "buffers": {"file": "zero-7-buffers.pt", "bytes": 2124},
//             "loss_scaler": {"scale": 32768, "clean": 1, "skipped": 1, "overflows_in_a_row": 0}},
//    "crc32c": "1f0e33a2"}
//
// "buckets" are the flat buffers the shards cut: ZeRO-1/2's gradient buckets ("sharding":
// "buckets", parameters contiguous: alignment 4 bytes) or stage 3's units ("units", each
// parameter at a multiple of alignment_bytes, 64 by default); "elements" is a buffer's used
// length (the end of its last parameter). "loss_scaler" only for fp16 runs. Format 1 (stages 1-2
// before stage 3 had checkpoints) had neither sharding nor alignment nor loss scaler and reads as
// "buckets" at 4 bytes.
//
// The CRC32C covers the body as serialized (nlohmann's dump(), whose key order is fixed), so a
// damaged manifest is refused rather than read as another layout. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/engine/shard_layout.h"
#include "braid/parallel/loss_scaler.h"

namespace braid::torch {

struct ManifestParam {
  std::string name;
  std::int64_t count = 0;
  bool operator==(const ManifestParam&) const = default;
};

// One flat buffer: a bucket (stages 1-2) or a unit (stage 3).
struct ManifestBucket {
  std::vector<ManifestParam> params;  // in the buffer's order
  bool operator==(const ManifestBucket&) const = default;
};

struct ManifestFile {
  std::string file;  // a name inside the checkpoint directory
  std::int64_t bytes = 0;
};

struct ZeroManifest {
  std::int64_t generation = 0;  // per save, in the file names: a save never overwrites the files it replaces
  int world_size = 0;
  std::string optimizer;        // zero_optimizer_state.h optimizer_kind
  std::string sharding = "buckets";  // "buckets" (ZeroOptimizer) or "units" (FullyShardedModule)
  std::int64_t alignment_bytes = 4;  // of every parameter's offset in its buffer
  std::string fingerprint;
  std::int64_t step = 0, epoch = 0, batch_in_epoch = 0;  // the TrainingPosition
  std::vector<ManifestBucket> buckets;
  std::vector<ManifestFile> shards;  // per rank of world_size
  ManifestFile buffers;              // the module's buffers, written by rank 0
  std::optional<parallel::DynamicLossScaler::State> loss_scaler;  // fp16's loss scale, when there is one
};

std::string encode_manifest(const ZeroManifest& manifest);
// Throws Corrupt naming `path` for text that is not a whole, intact manifest of this format.
ZeroManifest decode_manifest(const std::string& text, const ErrorContext& context, const std::string& path);

// The buffers laid out as ZeRO shards them at `world` ranks: buffer b is bucket (or unit) b, its
// parameters in order at multiples of `alignment_bytes` (4: contiguous, GradSync's
// bucket_shard_layout with the parameters' names; stage 3's 64: FullyShardedModule's layout).
engine::ShardLayout manifest_layout(const std::vector<ManifestBucket>& buckets, int world,
                                    std::size_t alignment_bytes = sizeof(float));

// The first difference between the parameters of two models, matched by name ("parameter 3 of
// this model, 'fc2.weight' of 68 elements, has 64 in the checkpoint"), or nullopt when they hold
// the same parameters. Neither the order nor the buffer boundaries count: loading re-cuts them
// (engine::plan_reshard_by_name), so the buckets of stages 1-2 and the units of stage 3 hold the
// same model.
std::optional<std::string> first_parameter_difference(const std::vector<ManifestBucket>& saved,
                                                      const std::vector<ManifestBucket>& here);

}  // namespace braid::torch
