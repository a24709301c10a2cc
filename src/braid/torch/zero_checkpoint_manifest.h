// The manifest of a sharded ZeRO checkpoint (zero_checkpoint.h): what a loader must know
// before it opens a shard. Written by rank 0 after every shard file is on disk; its rename is
// the checkpoint's commit point. JSON, readable by a person:
//
//   {"body": {"format": 1, "generation": 7, "world_size": 4, "optimizer": "adam",
//             "fingerprint": "model=gpt batch=24 ...", "position": {"step": 3, "epoch": 0, "batch_in_epoch": 3},
//             "buckets": [{"elements": 1221234, "params": [{"name": "head.weight", "count": 8320}, ...]}],
//             "shards": [{"file": "zero-7-rank0.pt", "bytes": 2443312}, ...],
//             "buffers": {"file": "zero-7-buffers.pt", "bytes": 2124}},
//    "crc32c": "1f0e33a2"}
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

namespace braid::torch {

struct ManifestParam {
  std::string name;
  std::int64_t count = 0;
  bool operator==(const ManifestParam&) const = default;
};

struct ManifestBucket {
  std::vector<ManifestParam> params;  // in bucket order
  std::int64_t elements() const;
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
  std::string fingerprint;
  std::int64_t step = 0, epoch = 0, batch_in_epoch = 0;  // the TrainingPosition
  std::vector<ManifestBucket> buckets;
  std::vector<ManifestFile> shards;  // per rank of world_size
  ManifestFile buffers;              // the module's buffers, written by rank 0
};

std::string encode_manifest(const ZeroManifest& manifest);
// Throws Corrupt naming `path` for text that is not a whole, intact manifest of this format.
ZeroManifest decode_manifest(const std::string& text, const ErrorContext& context, const std::string& path);

// The buckets laid out as ZeRO shards them at `world` ranks (GradSync's bucket_shard_layout with
// the parameters' names): buffer b is bucket b, parameters contiguous (4-byte alignment).
engine::ShardLayout manifest_layout(const std::vector<ManifestBucket>& buckets, int world);

// The first difference between the parameters of two models, both in bucket order ("parameter
// 3 is 'fc2.weight' of 1280 elements in the checkpoint, 'fc2.weight' of 2560 here"), or nullopt
// when they hold the same parameters (the bucket boundaries may differ: loading re-cuts them).
std::optional<std::string> first_parameter_difference(const std::vector<ManifestBucket>& saved,
                                                      const std::vector<ManifestBucket>& here);

}  // namespace braid::torch
