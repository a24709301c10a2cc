#include "braid/transport/matcher.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

constexpr MatchKey kTag1{.comm_id = 1, .channel = Channel::kUser, .tag = 1};
constexpr MatchKey kTag2{.comm_id = 1, .channel = Channel::kUser, .tag = 2};

RequestPtr make_recv(const MatchKey& key, std::string& buffer, std::size_t bytes) {
  buffer.assign(bytes, '\0');
  auto r = std::make_shared<Request>();
  r->kind = Request::Kind::kRecv;
  r->peer = 1;
  r->key = key;
  r->envelope = {.op = OpKind::kSendRecv, .seq = kAnySeq, .dtype = DType::kU8, .bytes = bytes};
  r->data = reinterpret_cast<std::byte*>(buffer.data());
  return r;
}

// Feeds a whole message through the matcher as a transport would.
void arrive(Matcher& m, const MatchKey& key, const std::string& payload) {
  WireHeader h = make_data_header(key, {.op = OpKind::kSendRecv, .seq = 0, .dtype = DType::kU8, .bytes = payload.size()});
  IncomingMessage in = m.begin_message(h);
  in.dst.write(0, reinterpret_cast<const std::byte*>(payload.data()), payload.size());
  in.received = payload.size();
  m.finish_message(in);
}

TEST(MatcherTest, PostedReceiveGetsThePayloadDirectly) {
  Matcher m(0, 1);
  std::string buf;
  auto r = make_recv(kTag1, buf, 5);
  m.post_recv(r);
  arrive(m, kTag1, "hello");
  EXPECT_TRUE(r->complete);
  EXPECT_EQ(buf, "hello");
  EXPECT_FALSE(m.has_posted_recvs());
}

TEST(MatcherTest, UnexpectedMessagesAreBufferedUntilClaimed) {
  Matcher m(0, 1);
  arrive(m, kTag2, "second");
  arrive(m, kTag1, "first");
  std::string a, b;
  auto r1 = make_recv(kTag1, a, 5);
  m.post_recv(r1);
  auto r2 = make_recv(kTag2, b, 6);
  m.post_recv(r2);
  EXPECT_TRUE(r1->complete && r2->complete);
  EXPECT_EQ(a, "first");
  EXPECT_EQ(b, "second");
}

// A scatter receive (Request::pieces) gets its message in its pieces, whether the message
// streams in after the receive was posted or was buffered before it.
TEST(MatcherTest, ScatterReceiveTakesTheMessageInItsPieces) {
  for (const bool buffered_first : {false, true}) {
    Matcher m(0, 1);
    std::string head(3, '.'), tail(4, '.');
    auto r = make_recv(kTag1, head, 3);
    r->data = nullptr;
    r->envelope.bytes = 7;
    r->pieces = {{reinterpret_cast<std::byte*>(head.data()), 3}, {reinterpret_cast<std::byte*>(tail.data()), 4}};
    if (buffered_first) arrive(m, kTag1, "abcdefg");
    m.post_recv(r);
    if (!buffered_first) arrive(m, kTag1, "abcdefg");
    EXPECT_TRUE(r->complete) << buffered_first;
    EXPECT_EQ(head + "|" + tail, "abc|defg") << buffered_first;
  }
}

TEST(MatcherTest, SameTagIsFirstInFirstOut) {
  Matcher m(0, 1);
  arrive(m, kTag1, "one");
  arrive(m, kTag1, "two");
  std::string a, b;
  auto r1 = make_recv(kTag1, a, 3);
  auto r2 = make_recv(kTag1, b, 3);
  m.post_recv(r1);
  m.post_recv(r2);
  EXPECT_EQ(a, "one");
  EXPECT_EQ(b, "two");
}

TEST(MatcherTest, ReceivePostedWhileMessageArrivesWaitsForItsEnd) {
  Matcher m(0, 1);
  WireHeader h = make_data_header(kTag1, {.op = OpKind::kSendRecv, .dtype = DType::kU8, .bytes = 4});
  IncomingMessage in = m.begin_message(h);  // unexpected, still arriving
  std::string buf;
  auto r = make_recv(kTag1, buf, 4);
  m.post_recv(r);
  EXPECT_FALSE(r->complete);
  in.dst.write(0, reinterpret_cast<const std::byte*>("data"), 4);
  in.received = 4;
  m.finish_message(in);
  EXPECT_TRUE(r->complete);
  EXPECT_EQ(buf, "data");
}

TEST(MatcherTest, SizeMismatchThrowsNamingBothSizes) {
  Matcher m(0, 1);
  std::string buf;
  m.post_recv(make_recv(kTag1, buf, 8));
  WireHeader h = make_data_header(kTag1, {.op = OpKind::kSendRecv, .dtype = DType::kU8, .bytes = 4});
  try {
    m.begin_message(h);
    FAIL() << "expected Mismatch";
  } catch (const Mismatch& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("8 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("4 bytes"), std::string::npos) << what;
    EXPECT_EQ(e.context().peer, 1);
  }
}

TEST(MatcherTest, FailAllFailsPostedReceives) {
  Matcher m(0, 1);
  std::string buf;
  auto r = make_recv(kTag1, buf, 1);
  m.post_recv(r);
  m.fail_all(std::make_exception_ptr(PeerLost({}, "gone")));
  EXPECT_TRUE(r->complete);
  EXPECT_THROW(std::rethrow_exception(r->error), PeerLost);
}

TEST(MatcherTest, BufferingBeyondTheLimitIsRefusedBeforeAllocatingAndClaimsFreeRoom) {
  Matcher m(0, 1, /*buffer_limit=*/1000);
  arrive(m, kTag1, std::string(600, 'a'));
  EXPECT_EQ(m.buffered_bytes(), 600u);
  WireHeader big = make_data_header(kTag2, {.op = OpKind::kSendRecv, .dtype = DType::kU8, .bytes = 401});
  try {
    m.begin_message(big);
    FAIL() << "buffered past the limit";
  } catch (const Corrupt& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("rank 1 announced a 401-byte message"), std::string::npos) << what;
    EXPECT_EQ(e.context().peer, 1);
  }
  // Claiming the first message frees its room; a message with a posted receive takes none.
  std::string buf;
  m.post_recv(make_recv(kTag1, buf, 600));
  EXPECT_EQ(m.buffered_bytes(), 0u);
  arrive(m, kTag2, std::string(1000, 'b'));
  EXPECT_EQ(m.buffered_bytes(), 1000u);
  auto r = make_recv(kTag1, buf, 5000);
  m.post_recv(r);
  arrive(m, kTag1, std::string(5000, 'c'));
  EXPECT_TRUE(r->complete);
  m.fail_all(std::make_exception_ptr(PeerLost({}, "gone")));
  EXPECT_EQ(m.buffered_bytes(), 0u);
}

TEST(MatcherTest, AHeaderAnnouncingMoreThanThisHostHoldsIsCorruptNotAnAllocation) {
  Matcher m(2, 3);  // the default limit: this host's memory
  if (Matcher::host_memory_bytes() >= kMaxPayloadBytes) GTEST_SKIP() << "this host holds the largest payload";
  WireHeader huge = make_data_header(kTag1, {.op = OpKind::kSendRecv, .dtype = DType::kU8, .bytes = kMaxPayloadBytes});
  EXPECT_THROW(m.begin_message(huge), Corrupt);
  EXPECT_EQ(m.buffered_bytes(), 0u);
}


// Any-source receives (peer kAnySource) are posted to every sender's matcher; these play two
// peers' matchers (ranks 1 and 2 sending to rank 0) as the Fabric does.
RequestPtr make_any_source_recv(const MatchKey& key, std::string& buffer, std::size_t bytes) {
  RequestPtr r = make_recv(key, buffer, bytes);
  r->peer = kAnySource;
  return r;
}

TEST(MatcherAnySourceTest, TheFirstPeerToSendClaimsItAndTheOtherDropsIt) {
  Matcher from1(0, 1), from2(0, 2);
  std::string buf;
  auto any = make_any_source_recv(kTag1, buf, 3);
  from1.post_recv(any);
  from2.post_recv(any);
  EXPECT_FALSE(from1.has_posted_recvs()) << "an any-source receive is no reason to call one peer lost";
  arrive(from2, kTag1, "two");
  EXPECT_TRUE(any->complete);
  EXPECT_EQ(any->peer, 2);
  EXPECT_EQ(buf, "two");
  // Rank 1's message now finds no receive (the claimed one is skipped): it is buffered.
  arrive(from1, kTag1, "one");
  EXPECT_EQ(from1.buffered_bytes(), 3u);
  std::string later;
  auto next = make_any_source_recv(kTag1, later, 3);
  from1.post_recv(next);
  EXPECT_TRUE(next->complete);
  EXPECT_EQ(next->peer, 1);
  EXPECT_EQ(later, "one");
}

TEST(MatcherAnySourceTest, ABufferedMessageIsTakenAtOnce) {
  Matcher from1(0, 1);
  arrive(from1, kTag1, "early");
  std::string buf;
  auto any = make_any_source_recv(kTag1, buf, 5);
  from1.post_recv(any);
  EXPECT_TRUE(any->complete);
  EXPECT_EQ(any->peer, 1);
  EXPECT_EQ(buf, "early");
}

TEST(MatcherAnySourceTest, KeepsItsPlaceAmongTheReceivesPostedForThatPeer) {
  // MPI's order: an any-source receive posted before a receive for rank 1 takes rank 1's first message.
  Matcher from1(0, 1);
  std::string a, b;
  auto any = make_any_source_recv(kTag1, a, 5);
  auto specific = make_recv(kTag1, b, 6);
  from1.post_recv(any);
  from1.post_recv(specific);
  EXPECT_TRUE(from1.has_posted_recvs());
  arrive(from1, kTag1, "first");
  arrive(from1, kTag1, "second");
  EXPECT_EQ(a, "first");
  EXPECT_EQ(b, "second");
  EXPECT_EQ(any->peer, 1);
}

TEST(MatcherAnySourceTest, OtherTagsPassItBy) {
  Matcher from1(0, 1);
  std::string buf;
  auto any = make_any_source_recv(kTag1, buf, 5);
  from1.post_recv(any);
  arrive(from1, kTag2, "other");
  EXPECT_FALSE(any->complete);
  EXPECT_EQ(any->peer, kAnySource);
  EXPECT_EQ(from1.buffered_bytes(), 5u);
}

TEST(MatcherAnySourceTest, SizeMismatchNamesTheSender) {
  Matcher from2(0, 2);
  std::string buf;
  auto any = make_any_source_recv(kTag1, buf, 4);
  from2.post_recv(any);
  try {
    arrive(from2, kTag1, "toolong");
    FAIL() << "expected Mismatch";
  } catch (const Mismatch& e) {
    EXPECT_EQ(e.context().peer, 2);
  }
}

TEST(MatcherAnySourceTest, FailAllFailsItOnceAndLeavesAClaimedOneAlone) {
  Matcher from1(0, 1), from2(0, 2);
  std::string a, b;
  auto claimed = make_any_source_recv(kTag1, a, 3);
  auto waiting = make_any_source_recv(kTag2, b, 3);
  for (Matcher* m : {&from1, &from2}) {
    m->post_recv(claimed);
    m->post_recv(waiting);
  }
  arrive(from2, kTag1, "two");
  ASSERT_TRUE(claimed->complete);
  auto error = std::make_exception_ptr(PeerLost({.rank = 0, .peer = 1}, "gone"));
  from1.fail_all(error);
  from2.fail_all(error);
  EXPECT_FALSE(claimed->error) << "a receive that completed keeps its result";
  EXPECT_TRUE(waiting->complete);
  EXPECT_TRUE(waiting->error);
}

}  // namespace
}  // namespace braid
