// TlsSession over a socketpair (tls_session.h), with a relay in the middle where a test needs
// to watch or alter the bytes on the wire: the handshake with a key from the job token, data
// both ways, what a sniffer sees, and every way the handshake or a record can fail.
#include "braid/transport/tcp/tls_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "braid/base/unique_fd.h"

namespace braid::tcp {
namespace {

using Side = TlsSession::Side;

std::pair<UniqueFd, UniqueFd> socket_pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Deadline soon() { return Deadline::after(Seconds(10)); }

// (Structured bindings are not captured by lambdas below: clang 14, the sanitizer lanes'
// compiler, does not allow it.)

// Handshakes both ends at once (each waits for the other), connector on `a`, acceptor on `b`.
std::pair<std::unique_ptr<TlsSession>, std::unique_ptr<TlsSession>> handshake_both(int a, int b, std::string a_token,
                                                                                     std::string b_token) {
  auto acceptor = std::async(std::launch::async, [&] {
    return TlsSession::handshake(b, Side::kAcceptor, b_token, soon(), {.rank = 1, .peer = 0, .op = "test"});
  });
  std::unique_ptr<TlsSession> connector;
  std::exception_ptr connector_error;
  try {
    connector = TlsSession::handshake(a, Side::kConnector, a_token, soon(), {.rank = 0, .peer = 1, .op = "test"});
  } catch (...) {
    connector_error = std::current_exception();
    ::shutdown(a, SHUT_RDWR);  // the acceptor must not wait for a peer that gave up
  }
  std::unique_ptr<TlsSession> accepted = acceptor.get();  // rethrows the acceptor's error
  if (connector_error) std::rethrow_exception(connector_error);
  return {std::move(connector), std::move(accepted)};
}

std::string read_exactly(TlsSession& s, int fd, std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = s.read(out.data() + got, n - got);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
    } else if (r < 0 && errno == EAGAIN) {
      pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 10000) == 0) throw std::runtime_error("read timed out");
    } else {
      throw std::runtime_error("stream ended");
    }
  }
  return out;
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return s;
}

// Forwards bytes between two socket pairs, keeping what the connector sent and, once armed,
// flipping one bit of the next byte it forwards that way.
class Relay {
 public:
  Relay() {
    auto [a0, a1] = socket_pair();
    auto [b0, b1] = socket_pair();
    connector_ = std::move(a0), left_ = std::move(a1), right_ = std::move(b0), acceptor_ = std::move(b1);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
  }
  int connector_fd() const { return connector_.get(); }
  int acceptor_fd() const { return acceptor_.get(); }
  void arm_flip() { flip_ = true; }
  std::string seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void run() {
    char buf[65536];
    while (!stop_) {
      pollfd fds[2] = {{left_.get(), POLLIN, 0}, {right_.get(), POLLIN, 0}};
      if (::poll(fds, 2, 10) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if ((fds[i].revents & POLLIN) == 0) continue;
        ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) return;
        if (i == 0) {
          std::lock_guard<std::mutex> lock(mu_);
          seen_.append(buf, static_cast<std::size_t>(n));
          if (flip_.exchange(false)) buf[n / 2] ^= 0x10;
        }
        (void)!::write(i == 0 ? right_.get() : left_.get(), buf, static_cast<std::size_t>(n));
      }
    }
  }

  UniqueFd connector_, left_, right_, acceptor_;
  std::atomic<bool> stop_{false}, flip_{false};
  std::mutex mu_;
  std::string seen_;
  std::thread thread_;
};

TEST(TlsSessionTest, CarriesDataBothWaysUnderTls13) {
  auto [a, b] = socket_pair();
  auto sessions = handshake_both(a.get(), b.get(), "token", "token");
  std::unique_ptr<TlsSession>& connector = sessions.first;
  std::unique_ptr<TlsSession>& acceptor = sessions.second;
  EXPECT_EQ(connector->describe(), "TLSv1.3 TLS_AES_128_GCM_SHA256");
  const std::string big = pattern(3 * 1024 * 1024 + 17);  // many records, not a multiple of one
  auto writer = std::async(std::launch::async, [&] { connector->write_all(big.data(), big.size(), soon()); });
  EXPECT_EQ(read_exactly(*acceptor, b.get(), big.size()), big);
  writer.get();
  acceptor->write_all("pong", 4, soon());
  EXPECT_EQ(read_exactly(*connector, a.get(), 4), "pong");
}

TEST(TlsSessionTest, ASnifferSeesNoPlaintext) {
  Relay relay;
  auto [connector, acceptor] = handshake_both(relay.connector_fd(), relay.acceptor_fd(), "token", "token");
  std::string secret;
  for (int i = 0; i < 100; ++i) secret += "gradient-bytes-a-sniffer-must-not-read;";
  connector->write_all(secret.data(), secret.size(), soon());
  EXPECT_EQ(read_exactly(*acceptor, relay.acceptor_fd(), secret.size()), secret);
  const std::string wire = relay.seen();
  EXPECT_GT(wire.size(), secret.size());  // it all went through the relay...
  EXPECT_EQ(wire.find("gradient-bytes"), std::string::npos);  // ...encrypted
  EXPECT_EQ(wire.find("token"), std::string::npos);
}

TEST(TlsSessionTest, AnAlteredRecordIsCorrupt) {
  Relay relay;
  auto [connector, acceptor] = handshake_both(relay.connector_fd(), relay.acceptor_fd(), "token", "token");
  relay.arm_flip();
  const std::string data = pattern(4096);
  connector->write_all(data.data(), data.size(), soon());
  try {
    read_exactly(*acceptor, relay.acceptor_fd(), data.size());
    FAIL() << "an altered record was accepted";
  } catch (const Corrupt& e) {
    EXPECT_NE(std::string(e.what()).find("does not authenticate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("peer 0"), std::string::npos) << e.what();
  }
}

TEST(TlsSessionTest, AnotherTokensKeyFailsTheHandshake) {
  auto [a, b] = socket_pair();
  try {
    handshake_both(a.get(), b.get(), "token-of-this-job", "token-of-another-job");
    FAIL() << "the handshake succeeded with two keys";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == ErrorKind::kCorrupt || e.kind() == ErrorKind::kPeerLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("TLS"), std::string::npos) << e.what();
  }
}

TEST(TlsSessionTest, APeerThatDoesNotSpeakTlsFailsTheHandshake) {
  auto [a, b] = socket_pair();
  const int acceptor_fd = b.get();
  auto acceptor = std::async(std::launch::async, [&] {
    return TlsSession::handshake(acceptor_fd, Side::kAcceptor, "token", soon(), {.rank = 1, .peer = 0, .op = "test"});
  });
  const char junk[] = "this is a braid frame, not a ClientHello";
  ASSERT_EQ(::write(a.get(), junk, sizeof junk), static_cast<ssize_t>(sizeof junk));
  ::shutdown(a.get(), SHUT_WR);
  try {
    acceptor.get();
    FAIL() << "junk passed as a TLS handshake";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == ErrorKind::kCorrupt || e.kind() == ErrorKind::kPeerLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("BRAID_TLS"), std::string::npos) << e.what();
  }
}

TEST(TlsSessionTest, ASilentPeerTimesOutAndAnEmptyTokenIsRefused) {
  auto [a, b] = socket_pair();
  EXPECT_THROW(TlsSession::handshake(b.get(), Side::kAcceptor, "token", Deadline::after(Seconds(0.2)), {.rank = 1}),
               Timeout);
  try {
    TlsSession::handshake(a.get(), Side::kConnector, "", soon(), {.rank = 0});
    FAIL() << "an empty token was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("BRAID_JOB_TOKEN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::tcp
