#include "braid/bootstrap/job_token.h"

#include <mutex>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/log.h"
#include "braid/base/random.h"
#include "braid/bootstrap/byte_codec.h"
#include "braid/bootstrap/socket.h"

namespace braid::net {

namespace {

constexpr std::size_t kNonceOffset = 24;

std::string role_name(Role role) {
  switch (role) {
    case Role::kStoreClient: return "store client";
    case Role::kTransportPeer: return "transport peer";
  }
  return fmt::format("role {}", static_cast<unsigned>(role));
}

bool known_role(std::uint16_t role) {
  return role == static_cast<std::uint16_t>(Role::kStoreClient) ||
         role == static_cast<std::uint16_t>(Role::kTransportPeer);
}

// Reads exactly `n` bytes; a peer that closes first is reported as leaving mid-handshake.
std::string read_exactly(int fd, std::size_t n, const std::string& remote, const char* who, Deadline deadline,
                         const ErrorContext& ctx) {
  std::string bytes(n, '\0');
  try {
    read_all(fd, bytes.data(), n, deadline, ctx);
  } catch (const PeerLost&) {
    throw PeerLost(ctx, fmt::format("{} {} closed the connection during the handshake", who, remote));
  }
  return bytes;
}

// Reads and decodes one hello; a malformed one is logged with the remote address.
std::pair<Hello, std::string> read_hello(int fd, const std::string& remote, Deadline deadline,
                                         const ErrorContext& ctx) {
  std::string frame = read_exactly(fd, kHelloBytes, remote, "connection from", deadline, ctx);
  try {
    return {decode_hello(frame, ctx), frame};
  } catch (const Corrupt& e) {
    log::warn("refused connection from {}: {}", remote, e.detail());
    throw Corrupt(ctx, fmt::format("{} (from {})", e.detail(), remote));
  }
}

void send_byte(int fd, Verdict verdict, Deadline deadline, const ErrorContext& ctx) {
  auto byte = static_cast<std::uint8_t>(verdict);
  write_all(fd, &byte, 1, deadline, ctx);
}

// Best effort: the connector learns why; a connector already gone changes nothing.
void answer_refusal(int fd, Verdict verdict, Deadline deadline, const ErrorContext& ctx) {
  try {
    send_byte(fd, verdict, deadline, ctx);
  } catch (const Error&) {
  }
}

// The connector's reading of a refusal byte.
[[noreturn]] void refused_by(std::uint8_t byte, const std::string& remote, const ErrorContext& ctx) {
  switch (static_cast<Verdict>(byte)) {
    case Verdict::kRefusedToken:
      throw Mismatch(ctx, fmt::format("connection to {} refused: job token rejected (is BRAID_JOB_TOKEN the same on "
                                      "every rank?)",
                                      remote));
    case Verdict::kRefusedVersion:
      throw Mismatch(ctx, fmt::format("connection to {} refused: it speaks another braid protocol version (build "
                                      "every rank from the same braid)",
                                      remote));
    case Verdict::kRefusedRole:
      throw Mismatch(ctx, fmt::format("connection to {} refused: it does not take this kind of connection (a store "
                                      "client dialling a transport port, or the reverse?)",
                                      remote));
    case Verdict::kAccepted:
    case Verdict::kChallenge:
      break;
  }
  throw Corrupt(ctx, fmt::format("connection to {} answered the handshake with unexpected byte {}", remote, byte));
}

std::uint8_t read_answer(int fd, const std::string& remote, Deadline deadline, const ErrorContext& ctx) {
  try {
    std::uint8_t byte = 0;
    read_all(fd, &byte, 1, deadline, ctx);
    return byte;
  } catch (const PeerLost&) {
    throw PeerLost(ctx, fmt::format("connection to {} closed during the handshake: it is not a braid listener of "
                                    "this job, or it found the hello malformed",
                                    remote));
  }
}

}  // namespace

std::string generate_job_token() { return random_hex(16); }

std::string encode_hello(const Hello& hello) {
  if (hello.token.size() > kMaxTokenBytes) {
    throw InvalidArgument({}, fmt::format("job token is {} bytes long; at most {} are allowed", hello.token.size(),
                                          kMaxTokenBytes));
  }
  if (hello.nonce.size() != kNonceBytes) {
    throw InvalidArgument({}, fmt::format("hello nonce is {} bytes; it must be {}", hello.nonce.size(), kNonceBytes));
  }
  std::string out;
  out.reserve(kHelloBytes);
  ByteWriter w(out);
  w.u32(kHelloMagic);
  w.u16(hello.version);
  w.u16(static_cast<std::uint16_t>(hello.role));
  w.i32(hello.rank);
  w.u32(0);  // reserved (version 1's token length)
  w.u64(hello.purpose);
  w.bytes(hello.nonce);
  out.resize(kHelloBytes, '\0');
  return out;
}

Hello decode_hello(std::string_view frame, const ErrorContext& ctx) {
  BRAID_CHECK_EQ(frame.size(), kHelloBytes, Corrupt, ctx, "hello frame size");
  ByteReader r(frame, "hello frame");
  std::uint32_t magic = r.u32();
  if (magic != kHelloMagic) {
    throw Corrupt(ctx, fmt::format("bad magic 0x{:08x} in hello frame (expected 0x{:08x}): the remote end does not "
                                   "speak the braid protocol",
                                   magic, kHelloMagic));
  }
  Hello hello;
  hello.version = r.u16();
  // Another version may lay out the rest differently: judge_hello refuses it on the version.
  if (hello.version != kProtocolVersion) return hello;
  std::uint16_t role = r.u16();
  if (!known_role(role)) throw Corrupt(ctx, fmt::format("hello frame names unknown role {}", role));
  hello.role = static_cast<Role>(role);
  hello.rank = r.i32();
  r.u32();  // reserved
  hello.purpose = r.u64();
  hello.nonce = std::string(frame.substr(kNonceOffset, kNonceBytes));
  return hello;
}

Verdict judge_hello(const Hello& hello, std::optional<Role> expected_role) {
  if (hello.version != kProtocolVersion) return Verdict::kRefusedVersion;
  if (expected_role && hello.role != *expected_role) return Verdict::kRefusedRole;
  return Verdict::kChallenge;
}

std::string encode_challenge(std::string_view token, std::string_view hello_frame, std::string_view acceptor_nonce) {
  std::string out;
  out.reserve(kChallengeBytes);
  out.push_back(static_cast<char>(Verdict::kChallenge));
  out.append(acceptor_nonce);
  out.append(handshake_proof(Prover::kAcceptor, token, hello_frame, acceptor_nonce));
  return out;
}

Verdict judge_proof(std::string_view proof, std::string_view token, std::string_view hello_frame,
                    std::string_view acceptor_nonce) {
  return proof_matches(proof, Prover::kConnector, token, hello_frame, acceptor_nonce) ? Verdict::kAccepted
                                                                                      : Verdict::kRefusedToken;
}

void refuse(Verdict verdict, const Hello& hello, const std::string& remote, const ErrorContext& ctx) {
  switch (verdict) {
    case Verdict::kRefusedVersion:
      log::warn("refused connection from {}: braid protocol version {} (this process speaks {})", remote,
                hello.version, kProtocolVersion);
      throw Corrupt(ctx, fmt::format("connection from {} speaks braid protocol version {}, this process speaks {}",
                                     remote, hello.version, kProtocolVersion));
    case Verdict::kRefusedRole:
      log::warn("refused connection from {}: unexpected {} (rank {})", remote, role_name(hello.role), hello.rank);
      throw Mismatch(ctx, fmt::format("unexpected {} connection from {}", role_name(hello.role), remote));
    case Verdict::kRefusedToken:
    case Verdict::kAccepted:  // a caller bug; refusing is the safe reading
    case Verdict::kChallenge:
      break;
  }
  log::warn("refused connection from {}: wrong job token", remote);
  throw Mismatch(ctx, fmt::format("wrong job token from {}", remote));
}

void client_handshake(int fd, const Hello& hello, Deadline deadline, const ErrorContext& ctx) {
  warn_if_no_token(hello.token);
  const std::string remote = peer_address(fd);
  Hello fresh = hello;
  fresh.nonce = fresh_nonce();
  const std::string frame = encode_hello(fresh);
  write_all(fd, frame.data(), frame.size(), deadline, ctx);

  std::uint8_t answer = read_answer(fd, remote, deadline, ctx);
  if (answer != static_cast<std::uint8_t>(Verdict::kChallenge)) refused_by(answer, remote, ctx);
  const std::string challenge = read_exactly(fd, kNonceBytes + kProofBytes, remote, "connection to", deadline, ctx);
  const std::string_view acceptor_nonce = std::string_view(challenge).substr(0, kNonceBytes);
  const bool acceptor_knows_token = proof_matches(std::string_view(challenge).substr(kNonceBytes),
                                                  Prover::kAcceptor, hello.token, frame, acceptor_nonce);
  // Prove ours even when the acceptor's proof failed: the acceptor then refuses it and logs a
  // wrong token, which is what both sides should report.
  const std::string proof = handshake_proof(Prover::kConnector, hello.token, frame, acceptor_nonce);
  write_all(fd, proof.data(), proof.size(), deadline, ctx);

  answer = read_answer(fd, remote, deadline, ctx);
  if (answer != static_cast<std::uint8_t>(Verdict::kAccepted)) refused_by(answer, remote, ctx);
  if (!acceptor_knows_token) {
    throw Mismatch(ctx, fmt::format("connection to {} refused by this rank: the listener accepted a proof but could "
                                    "not prove the job token itself (not a process of this job)",
                                    remote));
  }
}

Hello server_handshake(int fd, const std::string& expected_token, Role expected_role, Deadline deadline,
                       const ErrorContext& ctx) {
  warn_if_no_token(expected_token);
  const std::string remote = peer_address(fd);
  auto [hello, frame] = read_hello(fd, remote, deadline, ctx);
  Verdict verdict = judge_hello(hello, expected_role);
  if (verdict != Verdict::kChallenge) {
    answer_refusal(fd, verdict, deadline, ctx);
    refuse(verdict, hello, remote, ctx);
  }
  const std::string acceptor_nonce = fresh_nonce();
  const std::string challenge = encode_challenge(expected_token, frame, acceptor_nonce);
  write_all(fd, challenge.data(), challenge.size(), deadline, ctx);

  const std::string proof = read_exactly(fd, kProofBytes, remote, "connection from", deadline, ctx);
  verdict = judge_proof(proof, expected_token, frame, acceptor_nonce);
  if (verdict != Verdict::kAccepted) {
    answer_refusal(fd, verdict, deadline, ctx);
    refuse(verdict, hello, remote, ctx);
  }
  send_byte(fd, Verdict::kAccepted, deadline, ctx);
  return hello;
}

void require_token_beyond_loopback(const std::string& bind_addr, const std::string& token, std::string_view listener,
                                   const ErrorContext& ctx) {
  if (!token.empty() || bind_addr.empty() || binds_loopback_only(bind_addr)) return;
  throw InvalidArgument(ctx, fmt::format("refusing to start {} on {} without a job token: any process that can reach "
                                         "that address could join the job; set BRAID_JOB_TOKEN (braid-run --token-file "
                                         "F, or its own fresh token) or listen on loopback only",
                                         listener, bind_addr));
}

void warn_if_no_token(const std::string& token) {
  if (!token.empty()) return;
  // A per-process fact, said once: the only process-wide state in this layer.
  static std::once_flag once;
  std::call_once(once, [] {
    log::warn("no job token is set (BRAID_JOB_TOKEN is empty): any process that can reach this job's ports can join "
              "it; braid-run sets one for you");
  });
}

}  // namespace braid::net
