// The membership agreement (membership.h) with one thread per survivor over a real store: every
// survivor adopts the same membership whatever order they notice the loss in, a dead member is
// accounted for by braid-run's report or by the settle time, and a slow member is left out
// with a PeerLost rather than included by some and not others.
#include "braid/bootstrap/membership.h"

#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/bootstrap/store.h"

namespace braid {
namespace {

const std::string kToken = "membership-test-token-0123";

class MembershipTest : public ::testing::Test {
 protected:
  StoreServer server_{"127.0.0.1", 0, kToken};
  std::unique_ptr<StoreClient> client(int id) {
    return std::make_unique<StoreClient>("127.0.0.1", server_.port(), kToken, id, Deadline::after(Seconds(10)));
  }
  // Member `id` reports after `delay`, having completed `last_step`.
  std::future<Membership> survivor(const Membership& current, int id, std::int64_t last_step, Seconds settle,
                                   Seconds delay = Seconds(0)) {
    return std::async(std::launch::async, [this, current, id, last_step, settle, delay] {
      std::this_thread::sleep_for(delay);
      auto store = client(id);
      return agree_on_survivors(*store, current, id, last_step, settle, Deadline::after(Seconds(20)));
    });
  }
};

TEST(MembershipRecord, RoundTripsAndRejectsMalformedText) {
  Membership m{.generation = 3, .members = {0, 2, 5}, .resume_step = 41};
  EXPECT_EQ(decode_membership(encode_membership(m)), m);
  EXPECT_EQ(m.rank_of(2), 1);
  EXPECT_EQ(m.rank_of(1), -1);
  EXPECT_EQ(initial_membership(3).members, (std::vector<int>{0, 1, 2}));
  for (const char* bad : {"", "1;2", "1;2;", "x;2;0", "1;2;0,,1", "1;2;3,1", "1;2;1,1", "1;-2;0"}) {
    EXPECT_THROW(decode_membership(bad), Corrupt) << bad;
  }
}

// Member 3 died and braid-run said so: the three survivors decide at once, noticing at
// different times, and resume from the least step one of them completed.
TEST_F(MembershipTest, SurvivorsAgreeOnceTheDeadMemberIsReported) {
  client(-1)->set(dead_member_key(3), "1");
  Membership current = initial_membership(4);
  std::vector<std::future<Membership>> views;
  views.push_back(survivor(current, 0, 7, Seconds(30)));
  views.push_back(survivor(current, 1, 6, Seconds(30), Seconds(0.3)));
  views.push_back(survivor(current, 2, 7, Seconds(30), Seconds(0.1)));
  const Membership expected{.generation = 1, .members = {0, 1, 2}, .resume_step = 6};
  for (auto& view : views) EXPECT_EQ(view.get(), expected);  // a 30 s settle never ran out: the test ends at once
}

// Nobody reported member 1 (started by hand, no braid-run): the settle time decides.
TEST_F(MembershipTest, UnreportedDeadMemberIsDroppedAfterTheSettleTime) {
  Membership current{.generation = 2, .members = {0, 1, 4}, .resume_step = 3};
  auto a = survivor(current, 0, 9, Seconds(0.5));
  auto b = survivor(current, 4, 9, Seconds(0.5));
  const Membership expected{.generation = 3, .members = {0, 4}, .resume_step = 9};
  EXPECT_EQ(a.get(), expected);
  EXPECT_EQ(b.get(), expected);
}

// Member 2 is alive but reports long after the others decided: it is told it was left out,
// and the others' membership does not change under them.
TEST_F(MembershipTest, SlowMemberArrivingAfterTheDecisionIsLeftOut) {
  Membership current = initial_membership(3);
  auto a = survivor(current, 0, 5, Seconds(0.3));
  auto b = survivor(current, 1, 5, Seconds(0.3));
  const Membership expected{.generation = 1, .members = {0, 1}, .resume_step = 5};
  EXPECT_EQ(a.get(), expected);
  EXPECT_EQ(b.get(), expected);
  auto late = survivor(current, 2, 5, Seconds(0.3));
  try {
    late.get();
    FAIL() << "the late member was let in";
  } catch (const PeerLost& e) {
    EXPECT_NE(std::string(e.what()).find("member 2 was left out of generation 1"), std::string::npos) << e.what();
  }
}

// A slow member that reports within the settle time is kept: the first to notice waits for it.
TEST_F(MembershipTest, SlowMemberWithinTheSettleTimeIsKept) {
  client(-1)->set(dead_member_key(0), "1");
  Membership current = initial_membership(3);
  auto quick = survivor(current, 1, 4, Seconds(20));
  auto slow = survivor(current, 2, 4, Seconds(20), Seconds(1.0));
  const Membership expected{.generation = 1, .members = {1, 2}, .resume_step = 4};
  EXPECT_EQ(quick.get(), expected);
  EXPECT_EQ(slow.get(), expected);
}

}  // namespace
}  // namespace braid
