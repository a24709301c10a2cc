// The chunking of a layer against the plan's segments (every segment once, in block order, no
// chunk over the size unless a segment alone is), for chunk sizes that divide a layer, that do
// not, that are smaller than a segment, and 0; and each side's runs (what a gather send reads
// and a scatter receive writes) against a direct copy of every head slice, with blocks
// scattered and adjacent, for 1->2, 2->1, 2->4.
#include "braid/serving/kv_transfer_chunks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace braid::serving {
namespace {

const KvBlockLayout kLayout{.layers = 2, .kv_heads = 4, .head_dim = 8, .block_tokens = 4, .element_bytes = 4};  // 1 KiB blocks

TEST(KvTransferChunks, EverySegmentOnceInOrderWithinTheChunkSize) {
  const KvTransferPlan plan = make_kv_transfer_plan(kLayout, /*tokens=*/37, 2, 4);  // 10 blocks, 2 segments of 128 B
  for (const std::int64_t chunk_bytes : {std::int64_t{0}, std::int64_t{100}, std::int64_t{256}, std::int64_t{768},
                                         std::int64_t{1000}, std::int64_t{1} << 20}) {
    for (const KvTransferPair& pair : plan.pairs) {
      const auto chunks = kv_layer_chunks(plan, pair, chunk_bytes);
      const auto segments = plan.segments(pair);
      std::size_t i = 0;
      std::int64_t total = 0;
      for (const KvChunk& c : chunks) {
        ASSERT_FALSE(c.pieces.empty());
        std::int64_t bytes = 0;
        for (const KvChunkPiece& p : c.pieces) {
          EXPECT_EQ(p.block, static_cast<std::int64_t>(i / segments.size())) << chunk_bytes;
          EXPECT_EQ(p.segment.source_offset, segments[i % segments.size()].source_offset);
          EXPECT_EQ(p.segment.target_offset, segments[i % segments.size()].target_offset);
          bytes += p.segment.bytes;
          ++i;
        }
        EXPECT_EQ(bytes, c.bytes);
        if (chunk_bytes == 0) {
          EXPECT_EQ(c.pieces.size(), 1u);
        } else if (c.pieces.size() > 1) {
          EXPECT_LE(c.bytes, chunk_bytes);
        }
        total += c.bytes;
      }
      EXPECT_EQ(i, static_cast<std::size_t>(plan.blocks) * segments.size()) << chunk_bytes;
      EXPECT_EQ(total * kLayout.layers, plan.pair_bytes(pair)) << chunk_bytes;
    }
  }
  // 768 B does not divide a layer's 2560 B of one pair: chunks of 768 B and a last one of 256 B.
  const auto chunks = kv_layer_chunks(plan, plan.pairs[0], 768);
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(chunks.back().bytes, 256);
}

// Blocks of `heads` heads whose every byte is distinct; `adjacent`: block b follows block b - 1
// in memory, otherwise the blocks lie in reverse order with a gap between them.
struct Blocks {
  std::vector<std::byte> storage;
  std::vector<std::span<std::byte>> spans;
  Blocks(std::int64_t count, std::int64_t bytes, bool adjacent, int seed) {
    const std::int64_t stride = adjacent ? bytes : bytes + 64;
    storage.resize(static_cast<std::size_t>(count * stride));
    for (std::size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
    for (std::int64_t b = 0; b < count; ++b) {
      const std::int64_t slot = adjacent ? b : count - 1 - b;
      spans.push_back({storage.data() + slot * stride, static_cast<std::size_t>(bytes)});
    }
  }
  std::vector<std::span<const std::byte>> const_spans() const { return {spans.begin(), spans.end()}; }
};

// A chunk's source runs, read in order, then written in order into its target runs, move
// exactly what copying every segment of every block directly would.
void expect_runs_equal_direct(int p, int d, bool source_adjacent, bool target_adjacent, std::int64_t chunk_bytes) {
  const KvTransferPlan plan = make_kv_transfer_plan(kLayout, /*tokens=*/29, p, d);
  for (const KvTransferPair& pair : plan.pairs) {
    const Blocks source(plan.blocks, kLayout.block_bytes(plan.prefill_heads()), source_adjacent, 1);
    Blocks moved(plan.blocks, kLayout.block_bytes(plan.decode_heads()), target_adjacent, 2);
    Blocks direct = moved;
    direct.spans.clear();
    for (std::int64_t b = 0; b < plan.blocks; ++b) {
      direct.spans.push_back({direct.storage.data() + (moved.spans[static_cast<std::size_t>(b)].data() - moved.storage.data()),
                              moved.spans[static_cast<std::size_t>(b)].size()});
      for (const KvSegment& s : plan.segments(pair)) {
        std::memcpy(direct.spans[static_cast<std::size_t>(b)].data() + s.target_offset,
                    source.spans[static_cast<std::size_t>(b)].data() + s.source_offset, static_cast<std::size_t>(s.bytes));
      }
    }
    const auto from = source.const_spans();
    for (const KvChunk& c : kv_layer_chunks(plan, pair, chunk_bytes)) {
      std::vector<std::byte> wire;
      for (std::span<const std::byte> run : kv_chunk_runs(c, from, KvSide::kSource)) wire.insert(wire.end(), run.begin(), run.end());
      ASSERT_EQ(static_cast<std::int64_t>(wire.size()), c.bytes);
      std::size_t at = 0;
      for (std::span<std::byte> run : kv_chunk_runs(c, std::span<const std::span<std::byte>>(moved.spans), KvSide::kTarget)) {
        std::memcpy(run.data(), wire.data() + at, run.size());
        at += run.size();
      }
      ASSERT_EQ(at, wire.size());
    }
    EXPECT_EQ(moved.storage, direct.storage) << p << "->" << d << " pair " << pair.prefill_rank << "->"
                                             << pair.decode_rank << " chunk " << chunk_bytes;
  }
}

TEST(KvTransferChunks, RunsMoveEveryHeadSliceLikeADirectCopy) {
  for (const auto& [p, d] : {std::pair{1, 2}, std::pair{2, 1}, std::pair{2, 4}, std::pair{1, 1}}) {
    for (const bool source_adjacent : {false, true}) {
      for (const bool target_adjacent : {false, true}) {
        for (const std::int64_t chunk : {0, 700, 3072, 1 << 20}) expect_runs_equal_direct(p, d, source_adjacent, target_adjacent, chunk);
      }
    }
  }
}

TEST(KvTransferChunks, OneRunOnlyWhereThePiecesFollowEachOther) {
  const KvTransferPlan same = make_kv_transfer_plan(kLayout, 16, 1, 1);   // whole blocks: one segment each
  const KvTransferPlan split = make_kv_transfer_plan(kLayout, 16, 1, 2);  // K and V halves of each block
  for (const bool adjacent : {false, true}) {
    const Blocks blocks(same.blocks, kLayout.block_bytes(4), adjacent, 0);
    const auto spans = blocks.const_spans();
    const auto whole = kv_layer_chunks(same, same.pairs[0], 4096);
    ASSERT_EQ(whole.size(), 1u);
    EXPECT_EQ(kv_chunk_runs(whole[0], spans, KvSide::kSource).size() == 1, adjacent);
    EXPECT_EQ(kv_chunk_runs(whole[0], spans, KvSide::kTarget).size() == 1, adjacent);
    // The decode side of 1->2 holds whole blocks of 2 heads: its side of a chunk is one run
    // when its blocks are adjacent, the prefill side's (K slice, then V slice of every block)
    // is never one.
    const auto halves = kv_layer_chunks(split, split.pairs[0], 4096);
    const Blocks target(split.blocks, kLayout.block_bytes(2), adjacent, 0);
    EXPECT_GT(kv_chunk_runs(halves[0], spans, KvSide::kSource).size(), 1u);
    EXPECT_EQ(kv_chunk_runs(halves[0], std::span<const std::span<std::byte>>(target.spans), KvSide::kTarget).size() == 1,
              adjacent);
  }
}

}  // namespace
}  // namespace braid::serving
