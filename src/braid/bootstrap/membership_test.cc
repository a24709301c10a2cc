// The membership agreement (membership.h) with one thread per survivor over a real store: every
// survivor adopts the same membership whatever order they notice the loss in, a dead member is
// accounted for by braid-run's report or by the settle time, and a slow member is left out
// with a PeerLost rather than included by some and not others. The join: newcomers take fresh
// ids, are admitted together at a boundary, wait for the next one when a loss was decided first,
// and a loss and a join decided at the same moment still give every member one record.
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
  Membership joined{.generation = 2, .members = {0, 4}, .resume_step = 9, .announced_admitted = 3};
  EXPECT_EQ(encode_membership(joined), "2;9;0,4;3");
  EXPECT_EQ(decode_membership(encode_membership(joined)), joined);
  EXPECT_EQ(decode_membership("1;5;0,1").announced_admitted, 0);  // a record of before the join
  for (const char* bad : {"", "1;2", "1;2;", "x;2;0", "1;2;0,,1", "1;2;3,1", "1;2;1,1", "1;-2;0", "1;2;0;x", "1;2;0;1;1"}) {
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

// A newcomer's side, in a thread: takes an id, announces itself, waits for admission.
std::future<std::optional<Membership>> newcomer(StoreServer& server) {
  return std::async(std::launch::async, [&server] {
    StoreClient store("127.0.0.1", server.port(), kToken, -1, Deadline::after(Seconds(10)));
    const int id = allocate_member_id(store, Deadline::after(Seconds(10)));
    announce_newcomer(store, id, Deadline::after(Seconds(10)));
    return await_admission(store, id, Deadline::after(Seconds(20)));
  });
}

// Two newcomers at once: ids 2 and 3 (braid-run counts from the launch world of 2), both admitted
// at the members' boundary of step 5, every member and newcomer reading the same generation.
TEST_F(MembershipTest, TwoNewcomersAreAdmittedTogetherWithFreshIds) {
  client(-1)->add(kNextIdKey, 2);
  auto first = newcomer(server_);
  auto second = newcomer(server_);
  auto store = client(0);
  while (announced_count(*store, Deadline::after(Seconds(10))) < 2) std::this_thread::sleep_for(kPollInterval);
  EXPECT_EQ(ids_taken(*store, Deadline::after(Seconds(10))), 2);
  const Membership current = initial_membership(2);
  auto other = std::async(std::launch::async, [this, current] {
    return admit_newcomers(*client(1), current, 1, 5, 2, Deadline::after(Seconds(10)));
  });
  const Membership expected{.generation = 1, .members = {0, 1, 2, 3}, .resume_step = 5, .announced_admitted = 2};
  EXPECT_EQ(admit_newcomers(*store, current, 0, 5, 2, Deadline::after(Seconds(10))), expected);
  EXPECT_EQ(other.get(), expected);
  EXPECT_EQ(first.get(), expected);
  EXPECT_EQ(second.get(), expected);
}

// A newcomer announcing while the survivors shrink is not in the shrink's generation; the next
// boundary admits it. A newcomer still waiting when the job closes is told so.
TEST_F(MembershipTest, ANewcomerDuringAShrinkJoinsAtTheNextBoundary) {
  client(-1)->add(kNextIdKey, 2);
  client(-1)->set(dead_member_key(1), "1");
  auto late = newcomer(server_);
  auto store = client(0);
  while (announced_count(*store, Deadline::after(Seconds(10))) < 1) std::this_thread::sleep_for(kPollInterval);
  const Membership shrunk = agree_on_survivors(*store, initial_membership(2), 0, 7, Seconds(30), Deadline::after(Seconds(10)));
  EXPECT_EQ(shrunk, (Membership{.generation = 1, .members = {0}, .resume_step = 7}));
  const Membership grown = admit_newcomers(*store, shrunk, 0, 8, 1, Deadline::after(Seconds(10)));
  EXPECT_EQ(grown, (Membership{.generation = 2, .members = {0, 2}, .resume_step = 8, .announced_admitted = 1}));
  EXPECT_EQ(late.get(), grown);

  auto after_close = newcomer(server_);
  store->set(kClosedKey, "1");
  EXPECT_EQ(after_close.get(), std::nullopt);
}

// Member 2 died while members 0 and 1 were at a boundary admitting newcomer 3: member 1 decides
// the loss, member 0 the join, at the same moment. Whichever took the decider first wrote the
// one record both adopt (a loss record leaves the newcomer for the next boundary; a join record
// holds the dead member, whose absence the next connect turns into another agreement).
TEST_F(MembershipTest, ALossAndAJoinDecidedAtOnceGiveOneRecord) {
  client(-1)->add(kNextIdKey, 3);
  client(-1)->set(dead_member_key(2), "1");
  auto joining = newcomer(server_);
  auto store = client(0);
  while (announced_count(*store, Deadline::after(Seconds(10))) < 1) std::this_thread::sleep_for(kPollInterval);
  const Membership current = initial_membership(3);
  auto loss = survivor(current, 1, 4, Seconds(30));
  const Membership by_join = admit_newcomers(*store, current, 0, 4, 1, Deadline::after(Seconds(10)));
  EXPECT_EQ(loss.get(), by_join);
  EXPECT_EQ(by_join.generation, 1);
  EXPECT_GE(by_join.rank_of(0), 0);
  EXPECT_GE(by_join.rank_of(1), 0);
  if (by_join.rank_of(3) >= 0) {
    EXPECT_EQ(joining.get(), by_join);
  } else {
    store->set(kClosedKey, "1");  // this test's job ends here
    EXPECT_EQ(joining.get(), std::nullopt);
  }
}

}  // namespace
}  // namespace braid
