// The KV block geometry: block counts round up, bytes are whole blocks of K and V, and a bad
// field is refused by name.
#include "braid/base/kv_block_layout.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

constexpr KvBlockLayout kLayout{.layers = 6, .kv_heads = 4, .head_dim = 32, .block_tokens = 16, .element_bytes = 4};

TEST(KvBlockLayoutTest, BlocksRoundUpToWholeBlocks) {
  EXPECT_EQ(kLayout.blocks_for(0), 0);
  EXPECT_EQ(kLayout.blocks_for(1), 1);
  EXPECT_EQ(kLayout.blocks_for(16), 1);
  EXPECT_EQ(kLayout.blocks_for(17), 2);
  EXPECT_EQ(kLayout.blocks_for(100), 7);
}

TEST(KvBlockLayoutTest, BytesAreWholeBlocksOfKeysAndValues) {
  EXPECT_EQ(kLayout.head_slice_bytes(), 16 * 32 * 4);
  EXPECT_EQ(kLayout.block_bytes(4), 2 * 4 * kLayout.head_slice_bytes());
  EXPECT_EQ(kLayout.block_bytes(2) * 2, kLayout.block_bytes(4));  // TP 2 holds half the heads
  EXPECT_EQ(kLayout.sequence_bytes(100, 4), 6 * 7 * 16384);
}

TEST(KvBlockLayoutTest, RefusesANonPositiveFieldByName) {
  KvBlockLayout bad = kLayout;
  bad.block_tokens = 0;
  try {
    bad.validate("kv_test");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("block_tokens must be at least 1, got 0"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(kLayout.validate("kv_test"));
  EXPECT_EQ(kLayout.describe(), "6 layers x 4 heads x 32 dims, 16-token blocks, 4 B");
}

}  // namespace
}  // namespace braid
