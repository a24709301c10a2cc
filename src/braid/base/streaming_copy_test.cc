#include "braid/base/streaming_copy.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace braid {
namespace {

// Every combination of misaligned destination, misaligned source and a length that leaves a
// head, whole 64-byte blocks and a tail: the copy equals memcpy and touches nothing around it.
TEST(StreamingCopyTest, EqualsMemcpyForEveryAlignmentAndLength) {
  std::vector<std::uint8_t> src(1024 + 64), dst(1024 + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 3);
  for (std::size_t dst_off = 0; dst_off < 17; ++dst_off) {
    for (std::size_t src_off = 0; src_off < 3; ++src_off) {
      for (std::size_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 200, 1000}) {
        std::fill(dst.begin(), dst.end(), 0xAB);
        streaming_copy(dst.data() + dst_off, src.data() + src_off, bytes);
        ASSERT_EQ(std::memcmp(dst.data() + dst_off, src.data() + src_off, bytes), 0)
            << "dst+" << dst_off << " src+" << src_off << " bytes " << bytes;
        for (std::size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], 0xAB);
        for (std::size_t i = dst_off + bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xAB);
      }
    }
  }
}

// The switch counts the outputs of every rank of the host: they share its L3.
TEST(StreamingCopyTest, CopyForOutputStreamsOnceTheHostsOutputsReach4MiB) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  EXPECT_EQ(copy_for_output(4 * kMiB - 1, 1), copy_for_output(0, 1));
  EXPECT_NE(copy_for_output(4 * kMiB - 1, 1), &streaming_copy);
  EXPECT_EQ(copy_for_output(4 * kMiB, 1), &streaming_copy);
  EXPECT_EQ(copy_for_output(kMiB, 4), &streaming_copy);
  EXPECT_NE(copy_for_output(kMiB, 2), &streaming_copy);
  EXPECT_EQ(copy_for_output(2 * kMiB, 2), &streaming_copy);
  EXPECT_EQ(copy_for_output(4 * kMiB, 0), &streaming_copy);  // no rank count: this rank alone
  EXPECT_NE(copy_for_output(kMiB, 0), &streaming_copy);
}

}  // namespace
}  // namespace braid
