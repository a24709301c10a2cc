// MessageBuffer maps message byte ranges onto its pieces: every range of every split, in order.
#include "braid/transport/message_buffer.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace braid {
namespace {

// Pieces of 3, 0, 5 and 1 bytes over `memory` (the empty one must be skipped), with gaps
// between them so that a run never spans two pieces by accident.
struct Scattered {
  std::vector<std::byte> memory = std::vector<std::byte>(32, std::byte{0});
  std::vector<BufferPiece> pieces{{memory.data() + 1, 3}, {memory.data() + 6, 0}, {memory.data() + 8, 5}, {memory.data() + 20, 1}};
  static constexpr std::size_t kBytes = 9;
  MessageBuffer buffer() const { return MessageBuffer(pieces); }
};

std::vector<std::byte> iota_bytes(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i + 1);
  return v;
}

// Where message byte k lives in Scattered::memory, from the piece list alone.
std::vector<std::size_t> memory_index_of_each_byte(const Scattered& s) {
  std::vector<std::size_t> index;
  for (const BufferPiece& p : s.pieces) {
    for (std::size_t i = 0; i < p.bytes; ++i) index.push_back(static_cast<std::size_t>(p.data - s.memory.data()) + i);
  }
  return index;
}

TEST(MessageBufferTest, EveryRangeLandsExactlyWhereItsBytesLiveAndReadsBack) {
  const std::vector<std::byte> message = iota_bytes(Scattered::kBytes);
  for (std::size_t offset = 0; offset <= Scattered::kBytes; ++offset) {
    for (std::size_t n = 0; offset + n <= Scattered::kBytes; ++n) {
      Scattered s;
      s.buffer().write(offset, message.data() + offset, n);
      std::vector<std::byte> expected(s.memory.size(), std::byte{0});
      const std::vector<std::size_t> index = memory_index_of_each_byte(s);
      for (std::size_t k = offset; k < offset + n; ++k) expected[index[k]] = message[k];
      EXPECT_EQ(s.memory, expected) << offset << "+" << n;
      std::vector<std::byte> back(n);
      s.buffer().read(offset, back.data(), n);
      EXPECT_TRUE(std::equal(back.begin(), back.end(), message.begin() + static_cast<std::ptrdiff_t>(offset)))
          << offset << "+" << n;
    }
  }
}

TEST(MessageBufferTest, WholeMessageLandsInThePiecesInOrder) {
  Scattered s;
  const std::vector<std::byte> message = iota_bytes(Scattered::kBytes);
  s.buffer().write(0, message.data(), message.size());
  EXPECT_EQ(s.memory[1], std::byte{1});
  EXPECT_EQ(s.memory[3], std::byte{3});
  EXPECT_EQ(s.memory[8], std::byte{4});
  EXPECT_EQ(s.memory[12], std::byte{8});
  EXPECT_EQ(s.memory[20], std::byte{9});
}

TEST(MessageBufferTest, IovCoversTheRangeAndStopsAtTheLimit) {
  Scattered s;
  iovec iov[8];
  ASSERT_EQ(s.buffer().iov(2, 6, iov, 8), 2u);  // byte 2 of piece 0, then 5 bytes of piece 2
  EXPECT_EQ(iov[0].iov_base, s.memory.data() + 3);
  EXPECT_EQ(iov[0].iov_len, 1u);
  EXPECT_EQ(iov[1].iov_base, s.memory.data() + 8);
  EXPECT_EQ(iov[1].iov_len, 5u);
  ASSERT_EQ(s.buffer().iov(0, Scattered::kBytes, iov, 2), 2u);  // cut short: the last piece waits
  EXPECT_EQ(iov[0].iov_len + iov[1].iov_len, 8u);
  EXPECT_EQ(s.buffer().iov(4, 0, iov, 8), 0u);
}

TEST(MessageBufferTest, ContiguousBufferIsOneRun) {
  std::vector<std::byte> memory(16);
  MessageBuffer buffer(memory.data());
  EXPECT_TRUE(buffer.contiguous());
  iovec iov[4];
  ASSERT_EQ(buffer.iov(5, 7, iov, 4), 1u);
  EXPECT_EQ(iov[0].iov_base, memory.data() + 5);
  EXPECT_EQ(iov[0].iov_len, 7u);
}

}  // namespace
}  // namespace braid
