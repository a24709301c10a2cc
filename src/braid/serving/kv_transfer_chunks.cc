#include "braid/serving/kv_transfer_chunks.h"

#include <algorithm>

namespace braid::serving {
namespace {

std::int64_t side_offset(const KvSegment& s, KvSide side) {
  return side == KvSide::kSource ? s.source_offset : s.target_offset;
}

template <typename Byte>
std::vector<std::span<Byte>> runs(const KvChunk& chunk, std::span<const std::span<Byte>> layer_blocks, KvSide side) {
  std::vector<std::span<Byte>> out;
  for (const KvChunkPiece& p : chunk.pieces) {
    Byte* at = layer_blocks[static_cast<std::size_t>(p.block)].data() + side_offset(p.segment, side);
    const auto bytes = static_cast<std::size_t>(p.segment.bytes);
    if (!out.empty() && out.back().data() + out.back().size() == at) {
      out.back() = {out.back().data(), out.back().size() + bytes};
    } else {
      out.emplace_back(at, bytes);
    }
  }
  return out;
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

std::vector<std::span<const std::byte>> kv_chunk_runs(const KvChunk& chunk,
                                                      std::span<const std::span<const std::byte>> layer_blocks,
                                                      KvSide side) {
  return runs(chunk, layer_blocks, side);
}

std::vector<std::span<std::byte>> kv_chunk_runs(const KvChunk& chunk, std::span<const std::span<std::byte>> layer_blocks,
                                                KvSide side) {
  return runs(chunk, layer_blocks, side);
}

}  // namespace braid::serving
