#include "braid/tools/braid_train/idx_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "braid/base/error.h"

namespace braid::train {
namespace {

class IdxFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("braid-idx-" + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::vector<std::uint8_t> idx(std::vector<std::uint32_t> dims, const std::vector<std::uint8_t>& body) {
    std::vector<std::uint8_t> bytes = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
    for (std::uint32_t d : dims) {
      for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(d >> shift));
    }
    bytes.insert(bytes.end(), body.begin(), body.end());
    return bytes;
  }
  std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes, bool gzip) {
    std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(IdxFileTest, ReadsPlainAndGzippedFiles) {
  std::vector<std::uint8_t> body = {1, 2, 3, 4, 5, 6};
  for (bool gzip : {false, true}) {
    IdxArray a = read_idx(write(gzip ? "a.gz" : "a", idx({3, 2}, body), gzip));
    EXPECT_EQ(a.dims, (std::vector<std::int64_t>{3, 2}));
    EXPECT_EQ(a.data, body);
  }
}

TEST_F(IdxFileTest, RejectsMissingTruncatedAndForeignFiles) {
  EXPECT_THROW(read_idx((dir_ / "missing").string()), InvalidArgument);
  EXPECT_THROW(read_idx(write("short", idx({3, 2}, {1, 2, 3}), true)), Corrupt);
  EXPECT_THROW(read_idx(write("long", idx({1}, {1, 2}), false)), Corrupt);
  EXPECT_THROW(read_idx(write("magic", {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 0}, false)), Corrupt);
  EXPECT_THROW(read_idx(write("dims", {0, 0, 0x08, 9}, false)), Corrupt);
}

TEST_F(IdxFileTest, ImageSetNormalisesPixelsAndChecksLabels) {
  write("train-images-idx3-ubyte.gz", idx({2, 2, 2}, {0, 255, 0, 255, 0, 0, 0, 0}), true);
  write("train-labels-idx1-ubyte", idx({2}, {3, 9}), false);
  ImageSet set = read_image_set(dir_.string(), "train", 0);
  ASSERT_EQ(set.count, 2);
  EXPECT_EQ(set.labels, (std::vector<std::int64_t>{3, 9}));
  EXPECT_FLOAT_EQ(set.pixels[1], (1.0f - 0.2860f) / 0.3530f);
  EXPECT_EQ(read_image_set(dir_.string(), "train", 1).count, 1);
  write("t10k-images-idx3-ubyte", idx({1, 2, 2}, {0, 0, 0, 0}), false);
  write("t10k-labels-idx1-ubyte", idx({2}, {1, 2}), false);
  EXPECT_THROW(read_image_set(dir_.string(), "t10k", 0), InvalidArgument);  // 1 image, 2 labels
  write("t10k-labels-idx1-ubyte", idx({1}, {10}), false);
  EXPECT_THROW(read_image_set(dir_.string(), "t10k", 0), Corrupt);  // label outside 0..9
}

// --train-samples N reads only the first N items: their bytes are checked, the rest of the
// file is not read (so neither a short tail nor a gzip bomb behind them is seen), and the
// header's count still tells whether the images and labels files agree.
TEST_F(IdxFileTest, ALimitedReadReadsAndChecksOnlyTheFirstItems) {
  for (bool gzip : {false, true}) {
    IdxArray a = read_idx(write(gzip ? "a.gz" : "a", idx({3, 2}, {1, 2, 3, 4, 5, 6}), gzip), 2);
    EXPECT_EQ(a.dims, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(a.items_in_file, 3);
    EXPECT_EQ(a.data, (std::vector<std::uint8_t>{1, 2, 3, 4}));
    EXPECT_EQ(read_idx(write(gzip ? "b.gz" : "b", idx({3, 2}, {1, 2, 3, 4, 5, 6}), gzip), 7).dims[0], 3);
  }
  EXPECT_EQ(read_idx(write("tail", idx({3, 2}, {1, 2, 3}), true), 1).data, (std::vector<std::uint8_t>{1, 2}));
  EXPECT_THROW(read_idx(write("short", idx({3, 2}, {1, 2, 3}), true), 2), Corrupt);
  std::vector<std::uint8_t> bomb = idx({4}, {1, 2, 3, 4});
  bomb.resize(bomb.size() + (std::size_t{64} << 20), 0);
  EXPECT_EQ(read_idx(write("bomb.gz", bomb, true), 2).data, (std::vector<std::uint8_t>{1, 2}));
  write("train-images-idx3-ubyte", idx({3, 1, 1}, {0, 0, 0}), false);
  write("train-labels-idx1-ubyte", idx({2}, {1, 2}), false);
  EXPECT_THROW(read_image_set(dir_.string(), "train", 1), InvalidArgument);  // 3 images, 2 labels
}

// Found by tests/fuzz/idx_file_fuzz: four dimensions of 2^32-1 overflowed the product (signed
// overflow), which could wrap to the file's real size and pass the length check.
TEST_F(IdxFileTest, RefusesDimensionsWhoseProductOverflowsOrPassesTheBound) {
  EXPECT_THROW(read_idx(write("overflow", idx({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {}), false)),
               Corrupt);
  EXPECT_THROW(read_idx(write("over", idx({65536, 65536, 2}, {}), false)), Corrupt);  // 2^33 > kMaxIdxBodyBytes
  EXPECT_EQ(read_idx(write("empty", idx({0, 0xffffffffu}, {}), false)).data.size(), 0u);  // a zero dimension: no data
}

// A .gz that inflates past what its header promises is Corrupt (read_maybe_gzipped stops one
// chunk past the promise instead of inflating it all).
TEST_F(IdxFileTest, StopsInflatingPastThePromisedSize) {
  std::vector<std::uint8_t> bomb = idx({4}, {1, 2, 3, 4});
  bomb.resize(bomb.size() + (std::size_t{64} << 20), 0);  // 64 MiB of zeros: ~64 KiB gzipped
  EXPECT_THROW(read_idx(write("bomb.gz", bomb, true)), Corrupt);
}

}  // namespace
}  // namespace braid::train
