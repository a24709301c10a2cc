#include "braid/parallel/layer_partition.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "error_message.h"

namespace braid::parallel {
namespace {


TEST(LayerPartition, EvenCutFollowsTheInterleavedLayout) {
  LayerPartition p = even_layer_partition(8, 2, 2);
  EXPECT_EQ(p.range(0, 0), (LayerRange{0, 2}));
  EXPECT_EQ(p.range(1, 0), (LayerRange{2, 4}));
  EXPECT_EQ(p.range(0, 1), (LayerRange{4, 6}));
  EXPECT_EQ(p.range(1, 1), (LayerRange{6, 8}));
}

TEST(LayerPartition, ChunksThatDoNotDivideTheLayersAreNamed) {
  std::string e = testing::error_message_of([] { even_layer_partition(12, 2, 4); });
  EXPECT_NE(e.find("layers (12) must be divisible by stages x chunks (2 x 4 = 8)"), std::string::npos) << e;
  EXPECT_NE(e.find("each stage's 6 layers do not split into 4 equal chunks"), std::string::npos) << e;
  e = testing::error_message_of([] { even_layer_partition(3, 2, 2); });
  EXPECT_NE(e.find("stage 1, chunk 1 (virtual stage 3) would have no layers"), std::string::npos) << e;
  EXPECT_NE(testing::error_message_of([] { even_layer_partition(4, 0, 1); }).find("stages must be >= 1"), std::string::npos);
}

TEST(LayerPartition, BoundariesNameTheEmptyStage) {
  const std::vector<int> ok{3, 4, 7};
  LayerPartition p = layer_partition_from_boundaries(9, 4, 1, ok);
  EXPECT_EQ(p.range(3, 0), (LayerRange{7, 9}));
  const std::vector<int> repeated{3, 3, 7};
  std::string e = testing::error_message_of([&] { layer_partition_from_boundaries(9, 4, 1, repeated); });
  EXPECT_NE(e.find("stage 1, chunk 0 (virtual stage 1) would have no layers"), std::string::npos) << e;
  const std::vector<int> past_end{3, 4, 9};
  e = testing::error_message_of([&] { layer_partition_from_boundaries(9, 4, 1, past_end); });
  EXPECT_NE(e.find("stage 3, chunk 0 (virtual stage 3) would have no layers"), std::string::npos) << e;
  const std::vector<int> too_few{3};
  EXPECT_NE(testing::error_message_of([&] { layer_partition_from_boundaries(9, 4, 1, too_few); }).find("1 boundaries given"),
            std::string::npos);
}

TEST(LayerPartition, BalancedByWeightMinimisesTheHeaviestPiece) {
  const std::vector<std::int64_t> weights{1, 1, 1, 1, 8, 1, 1, 2};
  LayerPartition p = balanced_layer_partition(weights, 3, 1);
  EXPECT_EQ(p.range(0, 0), (LayerRange{0, 4}));  // 4
  EXPECT_EQ(p.range(1, 0), (LayerRange{4, 5}));  // 8: the heaviest piece cannot be lighter
  EXPECT_EQ(p.range(2, 0), (LayerRange{5, 8}));  // 4
  const std::vector<std::int64_t> two{5, 5};
  std::string e = testing::error_message_of([&] { balanced_layer_partition(two, 3, 1); });
  EXPECT_NE(e.find("stage 2, chunk 0 (virtual stage 2) would have no layers"), std::string::npos) << e;
}

}  // namespace
}  // namespace braid::parallel
