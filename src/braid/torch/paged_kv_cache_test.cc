#include "braid/torch/paged_kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

using ::torch::indexing::Slice;

KvBlockLayout small_layout() {
  return KvBlockLayout{.layers = 2, .kv_heads = 4, .head_dim = 3, .block_tokens = 4, .element_bytes = 4};
}

// Distinct values per (head, position, dim), offset so that K, V and layers differ.
::torch::Tensor pattern(std::int64_t heads, std::int64_t tokens, std::int64_t dims, float offset) {
  return ::torch::arange(heads * tokens * dims, ::torch::kFloat32).view({heads, tokens, dims}) + offset;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

// Writes in pieces that straddle block boundaries read back whole, in order, and the blocks a
// sequence holds are KvBlockLayout::blocks_for of its length.
TEST(PagedKvCacheTest, WritesAcrossBlocksReadBackInOrderAndBlocksFollowTheLayout) {
  KvBlockLayout layout = small_layout();
  PagedKvCache cache(layout, HeadRange{.first = 0, .count = 4}, 8);
  cache.add_sequence(1);
  ::torch::Tensor k = pattern(4, 10, 3, 0), v = pattern(4, 10, 3, 1000);
  cache.extend(1, 3);
  cache.write(1, 1, 0, k.narrow(1, 0, 3), v.narrow(1, 0, 3));
  EXPECT_EQ(cache.used_blocks(), layout.blocks_for(3));
  cache.extend(1, 6);  // 9 tokens: three blocks
  cache.write(1, 1, 3, k.narrow(1, 3, 6), v.narrow(1, 3, 6));
  cache.extend(1, 1);
  cache.write(1, 1, 9, k.narrow(1, 9, 1), v.narrow(1, 9, 1));
  EXPECT_EQ(cache.length(1), 10);
  EXPECT_EQ(static_cast<std::int64_t>(cache.block_table(1).size()), layout.blocks_for(10));
  EXPECT_EQ(cache.used_blocks(), layout.blocks_for(10));
  EXPECT_TRUE(::torch::equal(cache.keys(1, 1), k));
  EXPECT_TRUE(::torch::equal(cache.values(1, 1), v));
  EXPECT_TRUE(::torch::equal(cache.keys(1, 0), ::torch::zeros_like(k))) << "layer 0 was never written";
}

// A block's span is the [K|V][head][slot][head_dim] byte range of kv_block_layout.h.
TEST(PagedKvCacheTest, BlockSpanIsTheLayoutsByteRange) {
  KvBlockLayout layout = small_layout();
  PagedKvCache cache(layout, HeadRange{.first = 2, .count = 2}, 4);
  cache.add_sequence(5);
  cache.extend(5, 6);
  ::torch::Tensor k = pattern(2, 6, 3, 0), v = pattern(2, 6, 3, 500);
  cache.write(5, 0, 0, k, v);
  std::int64_t second = cache.block_table(5)[1];
  KvBlockSpan span = cache.block_span(0, second);
  ASSERT_EQ(span.bytes, layout.block_bytes(2));
  ASSERT_EQ(span.bytes, 2 * 2 * 4 * 3 * 4);
  const auto* floats = reinterpret_cast<const float*>(span.data);
  // V (index 1), head 1, slot 1 (position 5), dim 2.
  std::int64_t offset = ((1 * 2 + 1) * layout.block_tokens + 1) * layout.head_dim + 2;
  EXPECT_EQ(floats[offset], v.index({1, 5, 2}).item<float>());
  // Writing bytes through the span is what a transfer does: keys() sees them.
  float changed = -7;
  std::memcpy(span.data, &changed, sizeof changed);  // K, head 0, slot 0 of the second block: position 4
  EXPECT_EQ(cache.keys(5, 0).index({0, 4, 0}).item<float>(), -7);
}

// An exhausted pool names the sequence, the blocks asked and free, and leaves everything as it was;
// freed blocks go back to the pool and are reused.
TEST(PagedKvCacheTest, ExhaustedPoolIsAClearErrorAndFreeReturnsBlocks) {
  PagedKvCache cache(small_layout(), HeadRange{.first = 0, .count = 4}, 3);
  cache.add_sequence(1);
  cache.add_sequence(2);
  cache.extend(1, 8);  // 2 blocks
  std::string message = message_of([&] { cache.extend(2, 5); });
  EXPECT_NE(message.find("sequence 2 needs 2 more blocks"), std::string::npos) << message;
  EXPECT_NE(message.find("1 free of 3"), std::string::npos) << message;
  EXPECT_EQ(cache.length(2), 0);
  EXPECT_EQ(cache.free_blocks(), 1);
  std::vector<std::int64_t> first_blocks = cache.block_table(1);
  cache.free(1);
  EXPECT_EQ(cache.free_blocks(), 3);
  EXPECT_FALSE(cache.has_sequence(1));
  cache.extend(2, 5);
  EXPECT_EQ(cache.block_table(2), first_blocks) << "freed blocks are reused first, in order";
}

TEST(PagedKvCacheTest, BadCallsAreInvalidArgumentNamingWhat) {
  KvBlockLayout layout = small_layout();
  EXPECT_NE(message_of([&] { PagedKvCache c(layout, HeadRange{.first = 3, .count = 2}, 4); }).find("[3, 5)"),
            std::string::npos);
  EXPECT_NE(message_of([&] { PagedKvCache c(layout, HeadRange{.first = 0, .count = 4}, 0); }).find("0 blocks"),
            std::string::npos);
  KvBlockLayout odd = layout;
  odd.element_bytes = 8;
  EXPECT_NE(message_of([&] { PagedKvCache c(odd, HeadRange{.first = 0, .count = 4}, 4); }).find("element_bytes 8"),
            std::string::npos);
  PagedKvCache cache(layout, HeadRange{.first = 0, .count = 4}, 4, /*rank=*/3);
  cache.add_sequence(1);
  cache.extend(1, 2);
  std::string duplicate = message_of([&] { cache.add_sequence(1); });
  EXPECT_NE(duplicate.find("already"), std::string::npos) << duplicate;
  EXPECT_NE(duplicate.find("rank 3"), std::string::npos) << duplicate;
  EXPECT_NE(message_of([&] { cache.extend(9, 1); }).find("no sequence 9"), std::string::npos);
  ::torch::Tensor k = pattern(4, 3, 3, 0);
  EXPECT_NE(message_of([&] { cache.write(1, 0, 0, k, k); }).find("outside its 2 tokens"), std::string::npos);
  ::torch::Tensor wrong = pattern(2, 1, 3, 0);
  EXPECT_NE(message_of([&] { cache.write(1, 0, 0, wrong, wrong); }).find("must both be"), std::string::npos);
  EXPECT_NE(message_of([&] { cache.keys(1, 2); }).find("layer 2 of a 2-layer cache"), std::string::npos);
  EXPECT_NE(message_of([&] { cache.block_span(0, 4); }).find("block 4 of a 4-block pool"), std::string::npos);
}

// bf16 layouts (element_bytes 2) store bf16 and their spans are half the size.
TEST(PagedKvCacheTest, Bf16LayoutStoresBf16) {
  KvBlockLayout layout = small_layout();
  layout.element_bytes = 2;
  PagedKvCache cache(layout, HeadRange{.first = 0, .count = 4}, 2);
  EXPECT_EQ(cache.dtype(), ::torch::kBFloat16);
  EXPECT_EQ(cache.block_span(0, 1).bytes, layout.block_bytes(4));
  cache.add_sequence(0);
  cache.extend(0, 1);
  ::torch::Tensor k = pattern(4, 1, 3, 0);
  cache.write(0, 0, 0, k, k);
  EXPECT_TRUE(::torch::equal(cache.keys(0, 0), k.to(::torch::kBFloat16)));
}

}  // namespace
}  // namespace braid::torch
