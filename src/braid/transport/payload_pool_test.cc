// PayloadPool: a freed buffer comes back for a message that fits it (not for one less than half
// its size), the bounds hold, and the matcher's unexpected messages reuse delivered buffers
// with the right payload every time.
#include "braid/transport/payload_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "braid/transport/matcher.h"

namespace braid {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(PayloadPoolTest, AFreedBufferServesTheNextMessageThatFitsIt) {
  PayloadPool pool;
  PayloadBuffer first = pool.take(4 * kMiB);
  std::byte* memory = first.data.get();
  EXPECT_EQ(first.capacity, 4 * kMiB);
  pool.give(std::move(first));
  EXPECT_EQ(pool.kept(), 1U);
  PayloadBuffer again = pool.take(3 * kMiB);  // fits, and at least half its size
  EXPECT_EQ(again.data.get(), memory);
  EXPECT_EQ(again.capacity, 4 * kMiB);
  EXPECT_EQ(pool.kept(), 0U);
  pool.give(std::move(again));
  PayloadBuffer small = pool.take(kMiB);  // under half: a new buffer, the large one stays kept
  EXPECT_NE(small.data.get(), memory);
  EXPECT_EQ(pool.kept(), 1U);
  PayloadBuffer larger = pool.take(5 * kMiB);  // does not fit
  EXPECT_NE(larger.data.get(), memory);
}

TEST(PayloadPoolTest, KeepsAFewBuffersWithinTheBounds) {
  PayloadPool pool;
  pool.give(pool.take(PayloadPool::kSmallest - 1));  // small: the allocator's
  pool.give(pool.take(PayloadPool::kLargest + 1));   // too large to pin
  EXPECT_EQ(pool.kept(), 0U);
  for (std::size_t i = 0; i < PayloadPool::kKept + 2; ++i) pool.give(pool.take(kMiB * (i + 1) + i));
  EXPECT_EQ(pool.kept(), PayloadPool::kKept);
  PayloadBuffer smallest = pool.take(kMiB);  // the 1 MiB buffer was dropped for larger ones
  EXPECT_EQ(smallest.capacity, kMiB);
  pool.give(PayloadBuffer{});  // nothing to keep
  EXPECT_EQ(pool.kept(), PayloadPool::kKept);
}

// Through the matcher: unexpected messages of one size, claimed one after the other, each
// delivered with its own bytes from a reused buffer.
TEST(PayloadPoolTest, TheMatchersReusedBuffersDeliverEachMessagesOwnBytes) {
  constexpr MatchKey key{.comm_id = 1, .channel = Channel::kUser, .tag = 7};
  const std::size_t bytes = 256 << 10;
  Matcher m(0, 1);
  for (int round = 0; round < 3; ++round) {
    std::string payload(bytes, static_cast<char>('a' + round));
    WireHeader h = make_data_header(key, {.op = OpKind::kSendRecv, .seq = 0, .dtype = DType::kU8, .bytes = bytes});
    IncomingMessage in = m.begin_message(h);  // no receive posted: buffered
    in.dst.write(0, reinterpret_cast<const std::byte*>(payload.data()), bytes);
    in.received = bytes;
    m.finish_message(in);
    std::string got(bytes, '\0');
    auto r = std::make_shared<Request>();
    r->kind = Request::Kind::kRecv;
    r->peer = 1;
    r->key = key;
    r->envelope = {.op = OpKind::kSendRecv, .seq = kAnySeq, .dtype = DType::kU8, .bytes = bytes};
    r->data = reinterpret_cast<std::byte*>(got.data());
    m.post_recv(r);
    ASSERT_TRUE(r->complete);
    EXPECT_EQ(got, payload) << "round " << round;
    EXPECT_EQ(m.buffered_bytes(), 0U);
  }
}

}  // namespace
}  // namespace braid
