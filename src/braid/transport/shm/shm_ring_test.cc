#include "braid/transport/shm/shm_ring.h"

#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "braid/transport/shm/shm_layout.h"

namespace braid::shm {
namespace {

TEST(ShmLayoutTest, RegionsArePageAlignedAndDisjoint) {
  SegmentLayout layout{.slots = 5, .ring_bytes = 1 << 16};
  EXPECT_GE(layout.controls_offset(), sizeof(SegmentHeader));
  EXPECT_EQ(layout.controls_offset() % kPage, 0u);
  EXPECT_EQ(layout.rings_offset() % kPage, 0u);
  EXPECT_GE(layout.rings_offset(), layout.control_offset(4) + sizeof(RingControl));
  EXPECT_EQ(layout.ring_offset(4) + layout.ring_bytes, layout.total_bytes());
  EXPECT_EQ(sizeof(RingControl), 128u);  // head and tail on separate cache lines
}

TEST(ShmRingTest, WrapsAroundAndPreservesBytes) {
  RingControl control{};
  std::vector<std::byte> data(64);
  RingWriter w(&control, data.data(), data.size());
  RingReader r(&control, data.data(), data.size());
  std::vector<unsigned char> in(40), out(40);
  for (int round = 0; round < 10; ++round) {
    std::iota(in.begin(), in.end(), static_cast<unsigned char>(round * 7));
    ASSERT_GE(w.writable(), in.size());
    w.put(in.data(), in.size());
    EXPECT_EQ(r.readable(), 0u) << "nothing is visible before publish";
    w.publish();
    ASSERT_EQ(r.readable(), in.size());
    r.get(out.data(), out.size());
    r.release();
    EXPECT_EQ(in, out);
    EXPECT_EQ(w.writable(), data.size());
  }
}

TEST(ShmRingTest, ProducerAndConsumerThreadsAgree) {
  RingControl control{};
  std::vector<std::byte> data(1024);
  constexpr std::size_t kTotal = 1 << 20;
  std::thread producer([&] {
    RingWriter w(&control, data.data(), data.size());
    std::size_t sent = 0;
    while (sent < kTotal) {
      std::size_t n = std::min({w.writable(), kTotal - sent, std::size_t{300}});
      std::vector<unsigned char> piece(n);
      for (std::size_t i = 0; i < n; ++i) piece[i] = static_cast<unsigned char>((sent + i) * 31);
      w.put(piece.data(), n);
      w.publish();
      sent += n;
    }
  });
  RingReader r(&control, data.data(), data.size());
  std::size_t received = 0;
  bool ok = true;
  while (received < kTotal) {
    std::size_t n = std::min(r.readable(), std::size_t{500});
    std::vector<unsigned char> piece(n);
    r.get(piece.data(), n);
    r.release();
    for (std::size_t i = 0; i < n; ++i) ok &= piece[i] == static_cast<unsigned char>((received + i) * 31);
    received += n;
  }
  producer.join();
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace braid::shm
