#include "braid/serving/kv_transfer_chunks.h"

#include <algorithm>
#include <cstring>

namespace braid::serving {
namespace {

std::int64_t side_offset(const KvSegment& s, KvSide side) {
  return side == KvSide::kSource ? s.source_offset : s.target_offset;
}

template <typename Byte>
Byte* contiguous(const KvChunk& chunk, std::span<const std::span<Byte>> layer_blocks, KvSide side) {
  Byte* start = nullptr;
  Byte* end = nullptr;
  for (const KvChunkPiece& p : chunk.pieces) {
    Byte* at = layer_blocks[static_cast<std::size_t>(p.block)].data() + side_offset(p.segment, side);
    if (start == nullptr) {
      start = at;
    } else if (at != end) {
      return nullptr;
    }
    end = at + p.segment.bytes;
  }
  return start;
}

}  // namespace

std::vector<KvChunk> kv_layer_chunks(const KvTransferPlan& plan, const KvTransferPair& pair, std::int64_t chunk_bytes) {
  const std::vector<KvSegment> segments = plan.segments(pair);
  std::vector<KvChunk> chunks;
  for (std::int64_t b = 0; b < plan.blocks; ++b) {
    for (const KvSegment& s : segments) {
      const bool fits = !chunks.empty() && chunk_bytes > 0 && chunks.back().bytes + s.bytes <= chunk_bytes;
      if (!fits) chunks.emplace_back();
      chunks.back().pieces.push_back({.block = b, .segment = s});
      chunks.back().bytes += s.bytes;
    }
  }
  return chunks;
}

std::int64_t kv_largest_chunk(const std::vector<KvChunk>& chunks) {
  std::int64_t most = 0;
  for (const KvChunk& c : chunks) most = std::max(most, c.bytes);
  return most;
}

const std::byte* kv_chunk_contiguous(const KvChunk& chunk, std::span<const std::span<const std::byte>> layer_blocks,
                                     KvSide side) {
  return contiguous(chunk, layer_blocks, side);
}

std::byte* kv_chunk_contiguous(const KvChunk& chunk, std::span<const std::span<std::byte>> layer_blocks, KvSide side) {
  return contiguous(chunk, layer_blocks, side);
}

void kv_pack(const KvChunk& chunk, std::span<const std::span<const std::byte>> layer_blocks, std::byte* staging) {
  for (const KvChunkPiece& p : chunk.pieces) {
    const std::byte* from = layer_blocks[static_cast<std::size_t>(p.block)].data() + p.segment.source_offset;
    std::memcpy(staging, from, static_cast<std::size_t>(p.segment.bytes));
    staging += p.segment.bytes;
  }
}

void kv_unpack(const KvChunk& chunk, const std::byte* staging, std::span<const std::span<std::byte>> layer_blocks) {
  for (const KvChunkPiece& p : chunk.pieces) {
    std::byte* to = layer_blocks[static_cast<std::size_t>(p.block)].data() + p.segment.target_offset;
    std::memcpy(to, staging, static_cast<std::size_t>(p.segment.bytes));
    staging += p.segment.bytes;
  }
}

}  // namespace braid::serving
