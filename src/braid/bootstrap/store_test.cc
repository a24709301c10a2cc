#include "braid/bootstrap/store.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/socket.h"

namespace braid {
namespace {

using namespace std::chrono_literals;

const std::string kToken = "test-token-0123456789";
const ErrorContext kCtx{.op = "test"};

Deadline soon() { return Deadline::after(10s); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class StoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<StoreClient> client(int rank, const std::string& token = kToken) {
    return std::make_unique<StoreClient>("127.0.0.1", server_->port(), token, rank, soon());
  }

  // A socket that passed the handshake but speaks raw bytes afterwards.
  UniqueFd raw_authenticated() {
    UniqueFd fd = net::tcp_connect("127.0.0.1", server_->port(), soon(), kCtx);
    net::client_handshake(fd.get(), net::Hello{.role = net::Role::kStoreClient, .rank = 99, .token = kToken}, soon(),
                          kCtx);
    return fd;
  }

  // Whether the server has closed `fd` (reads until EOF, discarding anything it answered).
  static bool closed_by_server(int fd) {
    char buffer[256];
    try {
      for (;;) net::read_all(fd, buffer, 1, soon(), kCtx);
    } catch (const PeerLost&) {
      return true;
    } catch (const Timeout&) {
      return false;
    }
  }

  void expect_serving() {
    auto probe = client(42);
    probe->set("probe", "ok");
    EXPECT_EQ(probe->get("probe", soon()), "ok");
  }

  std::unique_ptr<StoreServer> server_ = std::make_unique<StoreServer>("127.0.0.1", 0, kToken);
};

TEST_F(StoreTest, BasicOperations) {
  auto store = client(0);
  EXPECT_EQ(server_->address(), fmt::format("127.0.0.1:{}", server_->port()));
  EXPECT_FALSE(store->check({"a"}));
  store->set("a", "alpha");
  EXPECT_EQ(store->get("a"), "alpha");
  store->set("a", std::string("bin\0ary", 7));
  EXPECT_EQ(store->get("a"), std::string("bin\0ary", 7));
  store->set("empty", "");
  EXPECT_EQ(store->get("empty"), "");
  EXPECT_TRUE(store->check({"a", "empty"}));
  EXPECT_FALSE(store->check({"a", "nope"}));
  EXPECT_TRUE(store->check({}));
  EXPECT_EQ(store->add("n", 5), 5);
  EXPECT_EQ(store->add("n", -7), -2);
  EXPECT_EQ(store->get("n"), "-2");  // counters are stored as decimal text
  EXPECT_TRUE(store->delete_key("a"));
  EXPECT_FALSE(store->delete_key("a"));
  EXPECT_FALSE(store->check({"a"}));
  store->wait({"n", "empty"}, soon());
}

TEST_F(StoreTest, LargeValueRoundTrip) {
  auto writer = client(0);
  auto reader = client(1);
  std::string value(8 << 20, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 31 + 7);
  writer->set("big", value);
  EXPECT_EQ(reader->get("big", soon()), value);
}

TEST_F(StoreTest, RanksRendezvousThroughTheStore) {
  constexpr int kRanks = 4;
  std::vector<std::future<std::vector<std::string>>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.push_back(std::async(std::launch::async, [this, r] {
      auto store = client(r);
      store->set(fmt::format("addr/{}", r), fmt::format("host{}:{}", r, 1000 + r));
      std::vector<std::string> keys;
      for (int p = 0; p < kRanks; ++p) keys.push_back(fmt::format("addr/{}", p));
      store->wait(keys, soon());
      store->add("arrived", 1);
      std::vector<std::string> seen;
      for (const auto& key : keys) seen.push_back(store->get(key, soon()));
      return seen;
    }));
  }
  for (auto& rank : ranks) {
    std::vector<std::string> seen = rank.get();
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(kRanks));
    for (int p = 0; p < kRanks; ++p) EXPECT_EQ(seen[p], fmt::format("host{}:{}", p, 1000 + p));
  }
  EXPECT_EQ(client(0)->add("arrived", 0), kRanks);
}

TEST_F(StoreTest, ConcurrentAddsAreAtomic) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      auto store = client(t);
      for (int i = 0; i < kAdds; ++i) store->add("counter", 1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(client(0)->get("counter"), std::to_string(kThreads * kAdds));
}

TEST_F(StoreTest, GetBlocksUntilAnotherClientSets) {
  auto waiter = std::async(std::launch::async, [this] { return client(1)->get("late", soon()); });
  EXPECT_EQ(waiter.wait_for(100ms), std::future_status::timeout);
  client(0)->set("late", "finally");
  EXPECT_EQ(waiter.get(), "finally");
}

TEST_F(StoreTest, WaitBlocksUntilAllKeysExist) {
  auto setter = client(0);
  setter->set("k1", "1");
  auto waiter = std::async(std::launch::async, [this] { client(1)->wait({"k1", "k2"}, soon()); });
  EXPECT_EQ(waiter.wait_for(100ms), std::future_status::timeout);
  setter->add("k2", 1);  // add creates the key and wakes waiters too
  waiter.get();
}

TEST_F(StoreTest, GetTimesOutNamingKeyAndStoreThenRecovers) {
  auto store = client(3);
  auto start = Clock::now();
  try {
    store->get("addr/7", Deadline::after(200ms));
    FAIL() << "get of a missing key returned";
  } catch (const Timeout& e) {
    EXPECT_TRUE(contains(e.what(), "[addr/7]")) << e.what();
    EXPECT_TRUE(contains(e.what(), server_->address())) << e.what();
    EXPECT_EQ(e.context().op, "store.get");
    EXPECT_EQ(e.context().rank, 3);
  }
  EXPECT_LT(Clock::now() - start, 5s);
  // The abandoned get must not be mistaken for the answer to the next request.
  store->set("addr/7", "here");
  store->set("other", "x");
  EXPECT_EQ(store->get("other", soon()), "x");
  EXPECT_EQ(store->get("addr/7", soon()), "here");
}

TEST_F(StoreTest, AddOnNonCounterIsInvalidArgument) {
  auto store = client(0);
  store->set("text", "hello");
  EXPECT_THROW(store->add("text", 1), InvalidArgument);
  EXPECT_EQ(store->get("text"), "hello");  // unchanged, and the connection still in step
}

TEST_F(StoreTest, WrongTokenIsRefusedAndServerKeepsServing) {
  try {
    client(5, "not-the-token");
    FAIL() << "wrong token accepted";
  } catch (const Mismatch& e) {
    EXPECT_TRUE(contains(e.what(), "job token rejected")) << e.what();
  }
  EXPECT_THROW(client(5, ""), Mismatch);
  expect_serving();
}

TEST_F(StoreTest, AProofThatIsNotTheTokensIsRefusedAndTheStoreServesOn) {
  UniqueFd fd = net::tcp_connect("127.0.0.1", server_->port(), soon(), kCtx);
  std::string hello = net::encode_hello(net::Hello{.role = net::Role::kStoreClient, .rank = 4});
  net::write_all(fd.get(), hello.data(), hello.size(), soon(), kCtx);
  std::string challenge(net::kChallengeBytes, '\0');
  net::read_all(fd.get(), challenge.data(), challenge.size(), soon(), kCtx);
  EXPECT_EQ(challenge[0], static_cast<char>(net::Verdict::kChallenge));
  std::string guess(net::kProofBytes, 'g');
  net::write_all(fd.get(), guess.data(), guess.size(), soon(), kCtx);
  std::uint8_t verdict = 99;
  net::read_all(fd.get(), &verdict, 1, soon(), kCtx);
  EXPECT_EQ(verdict, static_cast<std::uint8_t>(net::Verdict::kRefusedToken));
  EXPECT_TRUE(closed_by_server(fd.get()));
  expect_serving();
}

TEST_F(StoreTest, TransportRoleIsRefused) {
  UniqueFd fd = net::tcp_connect("127.0.0.1", server_->port(), soon(), kCtx);
  EXPECT_THROW(net::client_handshake(fd.get(), net::Hello{.role = net::Role::kTransportPeer, .token = kToken}, soon(),
                                     kCtx),
               Mismatch);
  expect_serving();
}

TEST_F(StoreTest, GarbageBeforeHandshakeIsDropped) {
  UniqueFd fd = net::tcp_connect("127.0.0.1", server_->port(), soon(), kCtx);
  std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(200, 'A');
  net::write_all(fd.get(), garbage.data(), garbage.size(), soon(), kCtx);
  EXPECT_TRUE(closed_by_server(fd.get()));
  expect_serving();
}

TEST_F(StoreTest, OversizeFrameLengthIsDropped) {
  UniqueFd fd = raw_authenticated();
  const char huge[4] = {'\xff', '\xff', '\xff', '\xff'};
  net::write_all(fd.get(), huge, sizeof huge, soon(), kCtx);
  EXPECT_TRUE(closed_by_server(fd.get()));
  expect_serving();
}

TEST_F(StoreTest, MalformedFrameIsDropped) {
  UniqueFd fd = raw_authenticated();
  // A well-sized frame whose key claims 4 GiB.
  const char frame[] = {13, 0, 0, 0, /*op get*/ 2, 1, 0, 0, 0, '\xff', '\xff', '\xff', '\xff', 0, 0, 0, 0};
  net::write_all(fd.get(), frame, sizeof frame, soon(), kCtx);
  EXPECT_TRUE(closed_by_server(fd.get()));
  expect_serving();
}

TEST_F(StoreTest, StalledClientsDoNotBlockOthers) {
  // One connected but silent before its hello, one stopped halfway through a frame.
  UniqueFd silent = net::tcp_connect("127.0.0.1", server_->port(), soon(), kCtx);
  UniqueFd half = raw_authenticated();
  const char partial[] = {100, 0, 0, 0, 1, 1};
  net::write_all(half.get(), partial, sizeof partial, soon(), kCtx);
  expect_serving();
}

TEST_F(StoreTest, FloodOfConnectionsWithoutHelloIsCappedAndRanksStillGetIn) {
  // More unproven connections than the cap (at most 32) allows: the oldest are closed to make
  // room, and a client with a hello is served at once.
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(net::tcp_connect("127.0.0.1", server_->port(), soon(), kCtx));
  expect_serving();
  std::this_thread::sleep_for(200ms);
  int closed = 0;
  for (const auto& fd : idle) {
    char byte;
    if (net::wait_ready(fd.get(), POLLIN, Deadline::after(0s)) && ::recv(fd.get(), &byte, 1, MSG_DONTWAIT) == 0) ++closed;
  }
  EXPECT_GE(closed, 100 - 32) << "the server must not hold more than its cap of connections without a hello";
}

TEST_F(StoreTest, ClientThatDoesNotReadDoesNotBlockOthers) {
  client(0)->set("big", std::string(16 << 20, 'b'));  // far more than the socket buffers hold
  UniqueFd reader = raw_authenticated();
  std::string get = store_wire::encode_request({store_wire::Op::kGet, {"big"}, {}});
  for (int i = 0; i < 4; ++i) net::write_all(reader.get(), get.data(), get.size(), soon(), kCtx);
  expect_serving();  // while the server still holds most of the answer for `reader`
}

TEST_F(StoreTest, ServerShutdownIsPeerLostForWaitingAndLaterCalls) {
  auto store = client(2);
  auto waiter = client(1);
  auto blocked = std::async(std::launch::async, [&waiter] { return waiter->get("never", soon()); });
  EXPECT_EQ(blocked.wait_for(100ms), std::future_status::timeout);
  auto start = Clock::now();
  server_.reset();
  try {
    blocked.get();
    FAIL() << "get returned after the store went away";
  } catch (const PeerLost& e) {
    EXPECT_TRUE(contains(e.what(), "rank 0")) << e.what();
  }
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_THROW(store->get("x", soon()), PeerLost);
  EXPECT_THROW(store->set("x", "y"), PeerLost);  // fails fast from now on
}

TEST(StoreClientConnect, RetriesUntilTheServerStarts) {
  std::uint16_t port = 0;
  {
    UniqueFd probe = net::tcp_listen("127.0.0.1", 0);
    port = net::local_port(probe.get());
  }
  auto early = std::async(std::launch::async, [port] {
    StoreClient store("127.0.0.1", port, kToken, 1, soon());
    return store.get("hello", soon());
  });
  std::this_thread::sleep_for(150ms);
  StoreServer server("127.0.0.1", port, kToken);
  StoreClient(("127.0.0.1"), port, kToken, 0, soon()).set("hello", "world");
  EXPECT_EQ(early.get(), "world");
}

TEST(StoreClientConnect, NoServerTimesOutWithHint) {
  std::uint16_t port = 0;
  {
    UniqueFd probe = net::tcp_listen("127.0.0.1", 0);
    port = net::local_port(probe.get());
  }
  try {
    StoreClient store("127.0.0.1", port, kToken, 1, Deadline::after(200ms));
    FAIL() << "connected to nothing";
  } catch (const Timeout& e) {
    EXPECT_TRUE(contains(e.what(), "rendezvous store")) << e.what();
    EXPECT_TRUE(contains(e.what(), fmt::format("127.0.0.1:{}", port))) << e.what();
  }
}

}  // namespace
}  // namespace braid
