#include "braid/bootstrap/job_token.h"

#include <chrono>
#include <future>

#include <fmt/format.h>
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

std::string hex(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::string counting_nonce(unsigned start, unsigned step) {
  std::string nonce(kNonceBytes, '\0');
  for (std::size_t i = 0; i < kNonceBytes; ++i) nonce[i] = static_cast<char>(start + step * i);
  return nonce;
}

TEST(Hello, EncodeDecodeRoundTripWithoutTheToken) {
  Hello hello{.role = Role::kStoreClient, .rank = 17, .token = "s3cret", .purpose = 0x0123456789abcdefULL,
              .nonce = counting_nonce(1, 3)};
  std::string frame = encode_hello(hello);
  ASSERT_EQ(frame.size(), kHelloBytes);
  // Magic first, little-endian: "IARB" on the wire.
  EXPECT_EQ(frame.substr(0, 4), "IARB");
  EXPECT_FALSE(contains(frame, "s3cret"));
  Hello decoded = decode_hello(frame, kCtx);
  EXPECT_EQ(decoded.role, Role::kStoreClient);
  EXPECT_EQ(decoded.rank, 17);
  EXPECT_EQ(decoded.token, "");
  EXPECT_EQ(decoded.purpose, 0x0123456789abcdefULL);
  EXPECT_EQ(decoded.version, kProtocolVersion);
  EXPECT_EQ(decoded.nonce, hello.nonce);
}

TEST(Hello, OverlongTokenOrBadNonceIsRefusedBeforeSending) {
  EXPECT_NO_THROW(encode_hello(Hello{.token = std::string(kMaxTokenBytes, 'x')}));
  EXPECT_THROW(encode_hello(Hello{.token = std::string(kMaxTokenBytes + 1, 'x')}), InvalidArgument);
  EXPECT_THROW(encode_hello(Hello{.nonce = "short"}), InvalidArgument);
}

TEST(Hello, BadMagicOrUnknownRoleIsCorrupt) {
  std::string frame = encode_hello(Hello{});
  frame[0] = 'G';
  try {
    decode_hello(frame, kCtx);
    FAIL();
  } catch (const Corrupt& e) {
    EXPECT_TRUE(contains(e.what(), "bad magic")) << e.what();
  }
  EXPECT_THROW(decode_hello("GET / HTTP/1.1\r\n", kCtx), Corrupt);
  frame = encode_hello(Hello{});
  frame[6] = 9;  // role
  EXPECT_THROW(decode_hello(frame, kCtx), Corrupt);
}

TEST(Hello, JudgeChecksVersionAndRoleTheProofChecksTheToken) {
  Hello hello{.role = Role::kStoreClient};
  EXPECT_EQ(judge_hello(hello), Verdict::kChallenge);
  EXPECT_EQ(judge_hello(hello, Role::kStoreClient), Verdict::kChallenge);
  EXPECT_EQ(judge_hello(hello, Role::kTransportPeer), Verdict::kRefusedRole);
  for (std::uint16_t other : {std::uint16_t{1}, std::uint16_t{kProtocolVersion + 1}}) {  // 1 sent the token
    Hello old = hello;
    old.version = other;
    EXPECT_EQ(judge_hello(decode_hello(encode_hello(old), kCtx)), Verdict::kRefusedVersion);
  }
  const std::string frame = encode_hello(hello);
  const std::string nonce = fresh_nonce();
  const std::string proof = handshake_proof(Prover::kConnector, "t", frame, nonce);
  EXPECT_EQ(judge_proof(proof, "t", frame, nonce), Verdict::kAccepted);
  EXPECT_EQ(judge_proof(proof, "u", frame, nonce), Verdict::kRefusedToken);
  EXPECT_EQ(judge_proof(proof, "", frame, nonce), Verdict::kRefusedToken);
  EXPECT_EQ(judge_proof(proof, "t", frame, fresh_nonce()), Verdict::kRefusedToken);  // a replay
  EXPECT_EQ(judge_proof(proof.substr(1), "t", frame, nonce), Verdict::kRefusedToken);
  // The acceptor's proof, which it gives to anyone, never passes as a connector's.
  EXPECT_EQ(judge_proof(handshake_proof(Prover::kAcceptor, "t", frame, nonce), "t", frame, nonce),
            Verdict::kRefusedToken);
  // No token configured: the same exchange with an empty key admits only peers without one.
  EXPECT_EQ(judge_proof(handshake_proof(Prover::kConnector, "", frame, nonce), "", frame, nonce), Verdict::kAccepted);
}

// Known answers computed independently (Python's hmac module over the same label, frame and
// nonce): the proof is HMAC-SHA256(token, label NUL hello acceptor-nonce).
TEST(HandshakeProof, IsHmacSha256OverTheLabelTheHelloAndTheAcceptorNonce) {
  std::string nonce(kNonceBytes, '\0');
  std::string acceptor_nonce(kNonceBytes, '\0');
  for (std::size_t i = 0; i < kNonceBytes; ++i) {
    nonce[i] = static_cast<char>(i);
    acceptor_nonce[i] = static_cast<char>(0xa0 + i % 16);
  }
  const std::string frame = encode_hello(Hello{.role = Role::kStoreClient, .rank = 5, .purpose = 7, .nonce = nonce});
  EXPECT_EQ(hex(handshake_proof(Prover::kConnector, "s3cret", frame, acceptor_nonce)),
            "5cf444e15500b18ab7b14761b1bbc06d22a2ba1e86cc650eb6367f0fb22578f4");
  EXPECT_EQ(hex(handshake_proof(Prover::kAcceptor, "s3cret", frame, acceptor_nonce)),
            "ab1914c292d57e8fac47970bb490cee937fe0474cbc4e66fd1d21d8473a9ccfa");
  EXPECT_EQ(hex(handshake_proof(Prover::kConnector, "", frame, acceptor_nonce)),
            "1aaed067c226a764e4e7985b95aa86a5bfb905032fff2a53df7b92e069c09d83");
  EXPECT_NE(fresh_nonce(), fresh_nonce());
  EXPECT_EQ(fresh_nonce().size(), kNonceBytes);
}

TEST(Hello, GeneratedTokensAreFresh) {
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

TEST(Handshake, WrongRoleIsRefusedBeforeAnyProof) {
  auto [client, server] = connected_pair();
  auto acceptor = std::async(std::launch::async, [fd = server.get()] {
    server_handshake(fd, "tok", Role::kTransportPeer, soon(), kCtx);
  });
  try {
    client_handshake(client.get(), Hello{.role = Role::kStoreClient, .token = "tok"}, soon(), kCtx);
    FAIL() << "wrong role accepted";
  } catch (const Mismatch& e) {
    EXPECT_TRUE(contains(e.what(), "does not take this kind of connection")) << e.what();
  }
  EXPECT_THROW(acceptor.get(), Mismatch);
}

// Forwards one handshake between `client` and `server` in its fixed frame sizes and returns
// every byte that crossed, both ways: what a sniffer on the link sees.
std::string relay_handshake(int client, int server) {
  std::string seen;
  auto forward = [&](int from, int to, std::size_t n) {
    std::string bytes(n, '\0');
    read_all(from, bytes.data(), n, soon(), kCtx);
    write_all(to, bytes.data(), n, soon(), kCtx);
    seen += bytes;
  };
  forward(client, server, kHelloBytes);
  forward(server, client, kChallengeBytes);
  forward(client, server, kProofBytes);
  forward(server, client, 1);
  return seen;
}

TEST(Handshake, ASnifferLearnsNoTokenAndCannotReplayWhatItSaw) {
  const std::string token = generate_job_token();
  auto [client, relay_client_side] = connected_pair();
  auto [relay_server_side, server] = connected_pair();
  auto acceptor = std::async(std::launch::async, [fd = server.get(), &token] {
    return server_handshake(fd, token, Role::kTransportPeer, soon(), kCtx);
  });
  auto sniffer = std::async(std::launch::async, [a = relay_client_side.get(), b = relay_server_side.get()] {
    return relay_handshake(a, b);
  });
  client_handshake(client.get(), Hello{.rank = 1, .token = token}, soon(), kCtx);
  EXPECT_EQ(acceptor.get().rank, 1);
  const std::string seen = sniffer.get();
  ASSERT_EQ(seen.size(), kHelloBytes + kChallengeBytes + kProofBytes + 1);
  // Neither the token nor any 4-character piece of it (nor its bytes as hex) crossed the link.
  for (std::size_t i = 0; i + 4 <= token.size(); ++i) {
    EXPECT_FALSE(contains(seen, token.substr(i, 4))) << "token piece at " << i;
    EXPECT_FALSE(contains(hex(seen), token.substr(i, 4) + token.substr(i, 4))) << i;
  }

  // Replaying the captured hello and proof to the next acceptor fails: its nonce is fresh.
  auto [attacker, next_server] = connected_pair();
  auto next = std::async(std::launch::async, [fd = next_server.get(), &token] {
    server_handshake(fd, token, Role::kTransportPeer, soon(), kCtx);
  });
  write_all(attacker.get(), seen.data(), kHelloBytes, soon(), kCtx);
  std::string challenge(kChallengeBytes, '\0');
  read_all(attacker.get(), challenge.data(), challenge.size(), soon(), kCtx);
  EXPECT_NE(challenge, seen.substr(kHelloBytes, kChallengeBytes));
  write_all(attacker.get(), seen.data() + kHelloBytes + kChallengeBytes, kProofBytes, soon(), kCtx);
  std::uint8_t verdict = 99;
  read_all(attacker.get(), &verdict, 1, soon(), kCtx);
  EXPECT_EQ(verdict, static_cast<std::uint8_t>(Verdict::kRefusedToken));
  try {
    next.get();
    FAIL() << "replay accepted";
  } catch (const Mismatch& e) {
    EXPECT_TRUE(contains(e.what(), "wrong job token")) << e.what();
  }
}

TEST(Handshake, AListenerThatCannotProveTheTokenIsRefusedByTheConnector) {
  auto [client, server] = connected_pair();
  // An impostor listener: answers with a challenge under another key, then accepts anything.
  auto impostor = std::async(std::launch::async, [fd = server.get()] {
    std::string hello(kHelloBytes, '\0');
    read_all(fd, hello.data(), hello.size(), soon(), kCtx);
    std::string challenge = encode_challenge("guess", hello, fresh_nonce());
    write_all(fd, challenge.data(), challenge.size(), soon(), kCtx);
    std::string proof(kProofBytes, '\0');
    read_all(fd, proof.data(), proof.size(), soon(), kCtx);
    auto accepted = static_cast<std::uint8_t>(Verdict::kAccepted);
    write_all(fd, &accepted, 1, soon(), kCtx);
  });
  try {
    client_handshake(client.get(), Hello{.token = "tok"}, soon(), kCtx);
    FAIL() << "impostor accepted";
  } catch (const Mismatch& e) {
    EXPECT_TRUE(contains(e.what(), "could not prove the job token")) << e.what();
  }
  impostor.get();
}

TEST(Handshake, AcceptorRejectsGarbageWithoutAnswering) {
  auto [client, server] = connected_pair();
  std::string garbage(kHelloBytes, 'Z');
  write_all(client.get(), garbage.data(), garbage.size(), soon(), kCtx);
  EXPECT_THROW(server_handshake(server.get(), "tok", Role::kTransportPeer, soon(), kCtx), Corrupt);
}

TEST(Handshake, ConnectorSeesAcceptorHangUpAsPeerLost) {
  auto [client, server] = connected_pair();
  server.reset();
  EXPECT_THROW(client_handshake(client.get(), Hello{.token = "t"}, soon(), kCtx), PeerLost);
}

TEST(Handshake, AcceptorSeesConnectorLeavingBeforeItsProofAsPeerLost) {
  auto [client, server] = connected_pair();
  std::string hello = encode_hello(Hello{.token = "t"});
  write_all(client.get(), hello.data(), hello.size(), soon(), kCtx);
  auto acceptor = std::async(std::launch::async, [fd = server.get()] {
    server_handshake(fd, "t", Role::kTransportPeer, soon(), kCtx);
  });
  std::string challenge(kChallengeBytes, '\0');
  read_all(client.get(), challenge.data(), challenge.size(), soon(), kCtx);
  client.reset();
  EXPECT_THROW(acceptor.get(), PeerLost);
}

}  // namespace
}  // namespace braid::net
