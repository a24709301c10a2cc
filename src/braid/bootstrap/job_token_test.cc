#include "braid/bootstrap/job_token.h"

#include <chrono>
#include <future>

#include <gtest/gtest.h>

#include "braid/bootstrap/socket.h"

namespace braid::net {
namespace {

using namespace std::chrono_literals;

const ErrorContext kCtx{.op = "test"};

Deadline soon() { return Deadline::after(10s); }

std::pair<UniqueFd, UniqueFd> connected_pair() {
  UniqueFd listener = tcp_listen("127.0.0.1", 0);
  UniqueFd client = tcp_connect("127.0.0.1", local_port(listener.get()), soon(), kCtx);
  UniqueFd server = accept_connection(listener.get(), soon(), kCtx);
  return {std::move(client), std::move(server)};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Hello, EncodeDecodeRoundTrip) {
  Hello hello{.role = Role::kStoreClient, .rank = 17, .token = "s3cret", .purpose = 0x0123456789abcdefULL};
  std::string frame = encode_hello(hello);
  ASSERT_EQ(frame.size(), kHelloBytes);
  // Magic first, little-endian: "IARB" on the wire.
  EXPECT_EQ(frame.substr(0, 4), "IARB");
  Hello decoded = decode_hello(frame, kCtx);
  EXPECT_EQ(decoded.role, Role::kStoreClient);
  EXPECT_EQ(decoded.rank, 17);
  EXPECT_EQ(decoded.token, "s3cret");
  EXPECT_EQ(decoded.purpose, 0x0123456789abcdefULL);
  EXPECT_EQ(decoded.version, kProtocolVersion);
}

TEST(Hello, FullLengthTokenFitsAndLongerIsRejected) {
  Hello hello{.token = std::string(kMaxTokenBytes, 'x')};
  EXPECT_EQ(decode_hello(encode_hello(hello), kCtx).token, hello.token);
  hello.token.push_back('y');
  EXPECT_THROW(encode_hello(hello), InvalidArgument);
}

TEST(Hello, BadMagicIsCorrupt) {
  std::string frame = encode_hello(Hello{});
  frame[0] = 'G';
  try {
    decode_hello(frame, kCtx);
    FAIL();
  } catch (const Corrupt& e) {
    EXPECT_TRUE(contains(e.what(), "bad magic")) << e.what();
  }
  EXPECT_THROW(decode_hello("GET / HTTP/1.1\r\n", kCtx), Corrupt);
}

TEST(Hello, OversizeTokenLengthFieldIsCorrupt) {
  std::string frame = encode_hello(Hello{.token = "abc"});
  frame[12] = static_cast<char>(200);  // token length field
  EXPECT_THROW(decode_hello(frame, kCtx), Corrupt);
}

TEST(Hello, JudgeChecksVersionTokenAndRole) {
  Hello hello{.role = Role::kStoreClient, .token = "t"};
  EXPECT_EQ(judge_hello(hello, "t"), Verdict::kAccepted);
  EXPECT_EQ(judge_hello(hello, "u"), Verdict::kRefusedToken);
  EXPECT_EQ(judge_hello(hello, ""), Verdict::kRefusedToken);
  EXPECT_EQ(judge_hello(hello, "t", Role::kTransportPeer), Verdict::kRefusedRole);
  EXPECT_EQ(judge_hello(Hello{.token = ""}, ""), Verdict::kAccepted);  // no token configured
  Hello old = hello;
  old.version = kProtocolVersion + 1;
  EXPECT_EQ(judge_hello(decode_hello(encode_hello(old), kCtx), "t"), Verdict::kRefusedVersion);
}

TEST(Hello, TokensEqual) {
  EXPECT_TRUE(tokens_equal("", ""));
  EXPECT_TRUE(tokens_equal("abc", "abc"));
  EXPECT_FALSE(tokens_equal("abc", "abd"));
  EXPECT_FALSE(tokens_equal("abc", "ab"));
  EXPECT_FALSE(tokens_equal("ab", std::string("ab\0", 3)));  // padding must not hide a length difference
  EXPECT_FALSE(tokens_equal(std::string(65, 'a'), std::string(65, 'a')));
  std::string token = generate_job_token();
  EXPECT_EQ(token.size(), 32u);
  EXPECT_NE(token, generate_job_token());
}

TEST(Handshake, MatchingTokenIsAccepted) {
  auto [client, server] = connected_pair();
  auto acceptor = std::async(std::launch::async, [fd = server.get()] {
    return server_handshake(fd, "tok", Role::kTransportPeer, soon(), kCtx);
  });
  client_handshake(client.get(), Hello{.role = Role::kTransportPeer, .rank = 3, .token = "tok", .purpose = 9}, soon(),
                   kCtx);
  Hello seen = acceptor.get();
  EXPECT_EQ(seen.rank, 3);
  EXPECT_EQ(seen.purpose, 9u);
}

TEST(Handshake, WrongTokenIsRefusedOnBothSides) {
  auto [client, server] = connected_pair();
  auto acceptor = std::async(std::launch::async, [fd = server.get()] {
    server_handshake(fd, "right", Role::kTransportPeer, soon(), kCtx);
  });
  try {
    client_handshake(client.get(), Hello{.token = "wrong"}, soon(), kCtx);
    FAIL() << "wrong token accepted";
  } catch (const Mismatch& e) {
    EXPECT_TRUE(contains(e.what(), "job token rejected")) << e.what();
    EXPECT_TRUE(contains(e.what(), "BRAID_JOB_TOKEN")) << e.what();
  }
  try {
    acceptor.get();
    FAIL() << "acceptor did not refuse";
  } catch (const Mismatch& e) {
    EXPECT_TRUE(contains(e.what(), "wrong job token from 127.0.0.1:")) << e.what();
  }
}

TEST(Handshake, ReceiveHelloRejectsGarbage) {
  auto [client, server] = connected_pair();
  std::string garbage(kHelloBytes, 'Z');
  write_all(client.get(), garbage.data(), garbage.size(), soon(), kCtx);
  EXPECT_THROW(receive_hello(server.get(), "tok", soon(), kCtx), Corrupt);
}

TEST(Handshake, ConnectorSeesAcceptorHangUpAsPeerLost) {
  auto [client, server] = connected_pair();
  send_hello(client.get(), Hello{.token = "t"}, soon(), kCtx);
  server.reset();
  EXPECT_THROW(expect_accept(client.get(), soon(), kCtx), PeerLost);
}

}  // namespace
}  // namespace braid::net
