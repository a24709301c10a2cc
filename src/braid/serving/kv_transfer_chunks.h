// How one (prefill rank, decode rank) pair's share of a layer is cut into messages: the pair's
// segments of every block of the layer, in block order, taken greedily into chunks of at most
// `chunk_bytes` (a segment larger than that is a chunk alone). One chunk is one message on the
// wire. Each side then moves a chunk on its own: straight from (into) its blocks when the
// chunk's bytes are one contiguous range of its memory (blocks adjacent in its pages), through
// a staging buffer it packs (unpacks) otherwise. The wire is the same either way, so the two
// sides never need to know each other's memory, only the plan and the chunk size they agreed on.
//
//   auto chunks = kv_layer_chunks(plan, pair, /*chunk_bytes=*/2 << 20);  // the same for every layer
//   const std::byte* direct = kv_chunk_contiguous(chunks[0], layer_blocks, KvSide::kSource);
//   if (!direct) kv_pack(chunks[0], layer_blocks, staging);
//
// chunk_bytes 0 keeps one message per segment (the unpacked protocol: no staging anywhere).
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "braid/serving/kv_transfer_plan.h"

namespace braid::serving {

// One segment of one block of the layer, at `offset` of its chunk's message.
struct KvChunkPiece {
  std::int64_t block = 0;  // in the layer
  KvSegment segment;
};

struct KvChunk {
  std::vector<KvChunkPiece> pieces;  // in message order
  std::int64_t bytes = 0;
};

enum class KvSide { kSource, kTarget };

// One layer's chunks of `pair` (every layer has the same). REQUIRES: chunk_bytes >= 0.
std::vector<KvChunk> kv_layer_chunks(const KvTransferPlan& plan, const KvTransferPair& pair, std::int64_t chunk_bytes);

// The largest chunk of `chunks`: what a staging buffer must hold.
std::int64_t kv_largest_chunk(const std::vector<KvChunk>& chunks);

// The chunk's first byte in one side's blocks of the layer when its pieces follow each other in
// that memory without a gap; nullptr when they do not (it must be staged).
const std::byte* kv_chunk_contiguous(const KvChunk& chunk, std::span<const std::span<const std::byte>> layer_blocks,
                                     KvSide side);
std::byte* kv_chunk_contiguous(const KvChunk& chunk, std::span<const std::span<std::byte>> layer_blocks, KvSide side);

// Copies the chunk's pieces from the source side's blocks into staging (chunk.bytes), and back
// out of staging into the target side's blocks.
void kv_pack(const KvChunk& chunk, std::span<const std::span<const std::byte>> layer_blocks, std::byte* staging);
void kv_unpack(const KvChunk& chunk, const std::byte* staging, std::span<const std::span<std::byte>> layer_blocks);

}  // namespace braid::serving
