#include "braid/compress/compression_state.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::compress {
namespace {

CompressionState sample() {
  CompressionState state;
  auto r = state.buffer("fc1.weight", kResidualRole, 5);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = 0.5f * static_cast<float>(i) - 1.0f;
  state.buffer("fc1.weight", kShardResidualRole, 2)[1] = 3.0f;
  state.buffer("emb", kPowerSgdQRole, 3, [](std::span<float> q) { q[0] = 7.0f; });
  state.buffer("empty", kMomentumRole, 0);
  return state;
}

TEST(CompressionStateTest, BuffersAreZeroFilledOnceAndKeepTheirContents) {
  CompressionState state;
  auto a = state.buffer("w", kResidualRole, 4);
  EXPECT_EQ(a.size(), 4u);
  for (float v : a) EXPECT_EQ(v, 0.0f);
  a[2] = 9.0f;
  EXPECT_EQ(state.buffer("w", kResidualRole, 4)[2], 9.0f);
  EXPECT_TRUE(state.find("w", kMomentumRole).empty());
  EXPECT_EQ(state.find("w", kResidualRole)[2], 9.0f);
  EXPECT_EQ(state.bytes(), 16u);
}

TEST(CompressionStateTest, AnotherLengthForTheSameTensorIsRefused) {
  CompressionState state;
  state.buffer("w", kResidualRole, 4);
  try {
    state.buffer("w", kResidualRole, 5);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
  }
}

TEST(CompressionStateTest, SerializeRoundTripsExactly) {
  CompressionState state = sample();
  CompressionState loaded;
  loaded.buffer("stale", kResidualRole, 3);
  loaded.deserialize(state.serialize());
  EXPECT_EQ(loaded, state);
  EXPECT_TRUE(loaded.find("stale", kResidualRole).empty());
  EXPECT_EQ(loaded.serialize(), state.serialize());  // canonical image
}

TEST(CompressionStateTest, DamagedImagesAreCorruptAndLeaveTheStateAlone) {
  CompressionState state = sample();
  auto image = state.serialize();
  CompressionState target = sample();
  target.buffer("keep", kResidualRole, 1)[0] = 1.0f;
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}, image.size() / 2, image.size() - 1}) {
    EXPECT_THROW(target.deserialize(std::span(image).first(cut)), Corrupt) << "cut at " << cut;
  }
  for (std::size_t byte = 0; byte < image.size(); byte += 7) {
    auto bad = image;
    bad[byte] ^= std::byte{0x10};
    EXPECT_THROW(target.deserialize(bad), Corrupt) << "byte " << byte;
  }
  EXPECT_EQ(target.find("keep", kResidualRole)[0], 1.0f);
}

}  // namespace
}  // namespace braid::compress
