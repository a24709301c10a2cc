#include "braid/bootstrap/socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <future>
#include <numeric>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace braid::net {
namespace {

using namespace std::chrono_literals;

const ErrorContext kCtx{.rank = 0, .op = "test"};

Deadline in(Seconds s) { return Deadline::after(s); }

// A connected loopback pair (client side, accepted side).
std::pair<UniqueFd, UniqueFd> connected_pair() {
  UniqueFd listener = tcp_listen("127.0.0.1", 0);
  UniqueFd client = tcp_connect("127.0.0.1", local_port(listener.get()), in(5s), kCtx);
  UniqueFd server = accept_connection(listener.get(), in(5s), kCtx);
  return {std::move(client), std::move(server)};
}

// A port that was free a moment ago (bound, read back, closed).
std::uint16_t free_port() {
  UniqueFd listener = tcp_listen("127.0.0.1", 0);
  return local_port(listener.get());
}

TEST(Socket, ListenOnEphemeralPortReportsAddress) {
  UniqueFd listener = tcp_listen("127.0.0.1", 0);
  EXPECT_NE(local_port(listener.get()), 0);
  EXPECT_EQ(local_address(listener.get()), "127.0.0.1");
  UniqueFd defaulted = tcp_listen("", 0);  // "" means loopback
  EXPECT_EQ(local_address(defaulted.get()), "127.0.0.1");
}

TEST(Socket, ListenOnBusyPortNamesTheAddress) {
  UniqueFd first = tcp_listen("127.0.0.1", 0);
  std::uint16_t port = local_port(first.get());
  try {
    tcp_listen("127.0.0.1", port);
    FAIL() << "second listen on a busy port succeeded";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("127.0.0.1:{}", port)), std::string::npos) << e.what();
  }
}

TEST(Socket, RoundTripOnBlockingAndNonBlockingSockets) {
  auto [client, server] = connected_pair();
  set_nonblocking(server.get());
  // Larger than the socket buffers, so both sides really wait in poll.
  std::vector<std::uint8_t> sent(8 << 20);
  std::iota(sent.begin(), sent.end(), 0);
  auto writer = std::async(std::launch::async, [&, fd = client.get()] {
    write_all(fd, sent.data(), sent.size(), in(20s), kCtx);
  });
  std::vector<std::uint8_t> received(sent.size());
  read_all(server.get(), received.data(), received.size(), in(20s), kCtx);
  writer.get();
  EXPECT_EQ(received, sent);
  EXPECT_EQ(peer_address(server.get()).rfind("127.0.0.1:", 0), 0u);
}

TEST(Socket, ReadAllAtEndOfStreamIsPeerLost) {
  auto [client, server] = connected_pair();
  char byte = 7;
  write_all(client.get(), &byte, 1, in(5s), kCtx);
  client.reset();
  char buffer[4];
  try {
    read_all(server.get(), buffer, sizeof buffer, in(5s), kCtx);
    FAIL() << "read past end of stream succeeded";
  } catch (const PeerLost& e) {
    EXPECT_NE(std::string(e.what()).find("connection closed by peer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 of 4 bytes"), std::string::npos) << e.what();
  }
}

TEST(Socket, WriteToClosedPeerIsPeerLostNotSigpipe) {
  auto [client, server] = connected_pair();
  server.reset();
  std::vector<char> chunk(1 << 20);
  // The first writes may land in buffers before the RST comes back; keep writing until it does.
  EXPECT_THROW(
      {
        for (int i = 0; i < 1000; ++i) write_all(client.get(), chunk.data(), chunk.size(), in(5s), kCtx);
      },
      PeerLost);
}

TEST(Socket, ReadAllTimesOut) {
  auto [client, server] = connected_pair();
  char buffer[1];
  auto start = Clock::now();
  EXPECT_THROW(read_all(server.get(), buffer, 1, in(100ms), kCtx), Timeout);
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(Socket, AcceptTimesOut) {
  UniqueFd listener = tcp_listen("127.0.0.1", 0);
  EXPECT_THROW(accept_connection(listener.get(), in(50ms), kCtx), Timeout);
}

TEST(Socket, ConnectRetriesUntilListenerAppears) {
  const std::uint16_t port = free_port();
  auto late_listener = std::async(std::launch::async, [port] {
    std::this_thread::sleep_for(200ms);
    UniqueFd listener = tcp_listen("127.0.0.1", port);
    return accept_connection(listener.get(), in(10s), kCtx);
  });
  UniqueFd client = tcp_connect("localhost", port, in(10s), kCtx);
  UniqueFd server = late_listener.get();
  char byte = 42;
  write_all(client.get(), &byte, 1, in(5s), kCtx);
  char got = 0;
  read_all(server.get(), &got, 1, in(5s), kCtx);
  EXPECT_EQ(got, 42);
}

TEST(Socket, ConnectTimeoutNamesTheEndpoint) {
  const std::uint16_t port = free_port();
  auto start = Clock::now();
  try {
    tcp_connect("127.0.0.1", port, in(300ms), kCtx);
    FAIL() << "connected to a port nobody listens on";
  } catch (const Timeout& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("127.0.0.1:{}", port)), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(Socket, ConnectToUnresolvableNameFailsAtOnce) {
  EXPECT_THROW(tcp_connect("no-such-host.invalid", 1234, in(30s), kCtx), InvalidArgument);
}

TEST(Socket, LoopbackAddresses) {
  EXPECT_TRUE(is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("127.8.9.10"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_TRUE(is_loopback_address("[::1]"));
  EXPECT_TRUE(is_loopback_address("::ffff:127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("localhost"));
  EXPECT_TRUE(is_loopback_address("LocalHost"));
  EXPECT_FALSE(is_loopback_address("128.0.0.1"));
  EXPECT_FALSE(is_loopback_address("10.0.0.1"));
  EXPECT_FALSE(is_loopback_address("::2"));
  EXPECT_FALSE(is_loopback_address("example.com"));
  EXPECT_FALSE(is_loopback_address(""));
}

// A listener's reach: literals as above; a name by everything it resolves to. "localhost"
// resolves to loopback on any machine; an unresolvable name and a routable literal do not.
TEST(Socket, BindsLoopbackOnly) {
  EXPECT_TRUE(binds_loopback_only("127.0.0.1"));
  EXPECT_TRUE(binds_loopback_only("[::1]"));
  EXPECT_TRUE(binds_loopback_only("localhost"));
  EXPECT_FALSE(binds_loopback_only("10.0.0.1"));
  EXPECT_FALSE(binds_loopback_only("0.0.0.0"));
  EXPECT_FALSE(binds_loopback_only("::"));
  EXPECT_FALSE(binds_loopback_only("no-such-host.invalid"));
  // This machine's own name: loopback only where /etc/hosts maps it so (as on this VM), and the
  // answer must agree with what the name resolves to.
  const std::string self = hostname();
  addrinfo* found = nullptr;
  if (::getaddrinfo(self.c_str(), nullptr, nullptr, &found) == 0) {
    bool all_loopback = true;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      if (a->ai_family == AF_INET) {
        all_loopback &= (ntohl(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr) >> 24) == 127;
      } else if (a->ai_family == AF_INET6) {
        all_loopback &= IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr) != 0;
      }
    }
    ::freeaddrinfo(found);
    EXPECT_EQ(binds_loopback_only(self), all_loopback) << self;
  }
}

TEST(Socket, FormatsEndpoints) {
  EXPECT_EQ(format_endpoint("10.1.2.3", 80), "10.1.2.3:80");
  EXPECT_EQ(format_endpoint("::1", 80), "[::1]:80");
  EXPECT_FALSE(hostname().empty());
}

}  // namespace
}  // namespace braid::net
