#include "braid/compress/compression_state.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "braid/base/crc32c.h"
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

// Bytes of address space this process maps now (/proc/self/statm: pages).
rlim_t address_space_in_use() {
  std::ifstream statm("/proc/self/statm");
  rlim_t pages = 0;
  statm >> pages;
  return pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
}

// A crafted image (its CRC32C recomputed) whose first key claims 4 GiB: refused as Corrupt
// before anything that large is allocated (it used to allocate first, then check).
TEST(CompressionStateTest, AHugeKeyLengthIsRefusedBeforeAllocating) {
  auto image = sample().serialize();
  const std::size_t key_length_at = 4 + 4 + 8;  // magic, version, entry count
  const std::uint32_t huge = 0xFFFFFFFFu;
  std::memcpy(image.data() + key_length_at, &huge, sizeof(huge));
  const std::uint32_t crc = crc32c(image.data(), image.size() - 4);
  std::memcpy(image.data() + image.size() - 4, &crc, sizeof(crc));
  CompressionState target;
  try {
    target.deserialize(image);
    FAIL() << "accepted";
  } catch (const Corrupt& e) {
    EXPECT_NE(std::string(e.what()).find("key runs past the end"), std::string::npos) << e.what();
  }
#if !defined(__SANITIZE_ADDRESS__)
  // In a child with 1 GiB of address space to spare: allocating the key first fails there
  // (std::bad_alloc, exit 1) instead of being refused (exit 0).
  EXPECT_EXIT(
      {
        rlimit limit{};
        ::getrlimit(RLIMIT_AS, &limit);
        limit.rlim_cur = address_space_in_use() + (rlim_t{1} << 30);
        ::setrlimit(RLIMIT_AS, &limit);
        try {
          target.deserialize(image);
        } catch (const Corrupt&) {
          std::_Exit(0);
        } catch (...) {
          std::_Exit(1);
        }
        std::_Exit(2);
      },
      ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
}  // namespace braid::compress
