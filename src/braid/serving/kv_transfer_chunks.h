// How one (prefill rank, decode rank) pair's share of a layer is cut into messages: the pair's
// segments of every block of the layer, in block order, taken greedily into chunks of at most
// `chunk_bytes` (a segment larger than that is a chunk alone). One chunk is one message on the
// wire. Each side moves a chunk straight from (into) its blocks as a gather send (scatter
// receive, Communicator::isendv / irecvv) of the chunk's runs in its own memory: blocks adjacent
// in its pages make one run, scattered ones several, and no side ever stages a copy. The wire is
// the same either way, so the two sides never need to know each other's memory, only the plan
// and the chunk size they agreed on.
//
//   auto chunks = kv_layer_chunks(plan, pair, /*chunk_bytes=*/2 << 20);  // the same for every layer
//   comm.isendv(kv_chunk_runs(chunks[0], layer_blocks, KvSide::kSource), decode_rank, tag);
//
// chunk_bytes 0 keeps one message per segment.
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

// The chunk's bytes in one side's blocks of the layer, in message order, as the runs of memory
// they occupy: pieces that follow each other without a gap are one run (a chunk of adjacent
// blocks is a single run, a plain send).
std::vector<std::span<const std::byte>> kv_chunk_runs(const KvChunk& chunk,
                                                      std::span<const std::span<const std::byte>> layer_blocks,
                                                      KvSide side);
std::vector<std::span<std::byte>> kv_chunk_runs(const KvChunk& chunk, std::span<const std::span<std::byte>> layer_blocks,
                                                KvSide side);

}  // namespace braid::serving
