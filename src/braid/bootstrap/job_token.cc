#include "braid/bootstrap/job_token.h"

#include <array>
#include <mutex>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/log.h"
#include "braid/base/random.h"
#include "braid/bootstrap/byte_codec.h"
#include "braid/bootstrap/socket.h"

namespace braid::net {

namespace {

using PaddedToken = std::array<unsigned char, kMaxTokenBytes>;

// REQUIRES: token.size() <= kMaxTokenBytes.
PaddedToken padded(std::string_view token) {
  PaddedToken out{};
  for (std::size_t i = 0; i < token.size(); ++i) out[i] = static_cast<unsigned char>(token[i]);
  return out;
}

std::string role_name(Role role) {
  switch (role) {
    case Role::kStoreClient: return "store client";
    case Role::kTransportPeer: return "transport peer";
  }
  return fmt::format("role {}", static_cast<unsigned>(role));
}

// Reads and decodes one hello; a malformed one is logged with the remote address.
Hello read_hello(int fd, const std::string& remote, Deadline deadline, const ErrorContext& ctx) {
  std::array<char, kHelloBytes> frame{};
  read_all(fd, frame.data(), frame.size(), deadline, ctx);
  try {
    return decode_hello(std::string_view(frame.data(), frame.size()), ctx);
  } catch (const Corrupt& e) {
    log::warn("refused connection from {}: {}", remote, e.detail());
    throw Corrupt(ctx, fmt::format("{} (from {})", e.detail(), remote));
  }
}

}  // namespace

std::string generate_job_token() { return random_hex(16); }

bool tokens_equal(std::string_view a, std::string_view b) {
  if (a.size() > kMaxTokenBytes || b.size() > kMaxTokenBytes) return false;
  const PaddedToken pa = padded(a);
  const PaddedToken pb = padded(b);
  // volatile keeps the compiler from turning the accumulation into an early-exit compare.
  volatile unsigned diff = static_cast<unsigned>(a.size() ^ b.size());
  for (std::size_t i = 0; i < kMaxTokenBytes; ++i) diff = diff | static_cast<unsigned>(pa[i] ^ pb[i]);
  return diff == 0;
}

std::string encode_hello(const Hello& hello) {
  if (hello.token.size() > kMaxTokenBytes) {
    throw InvalidArgument({}, fmt::format("job token is {} bytes long; at most {} are allowed", hello.token.size(),
                                          kMaxTokenBytes));
  }
  std::string out;
  out.reserve(kHelloBytes);
  ByteWriter w(out);
  w.u32(kHelloMagic);
  w.u16(hello.version);
  w.u16(static_cast<std::uint16_t>(hello.role));
  w.i32(hello.rank);
  w.u32(static_cast<std::uint32_t>(hello.token.size()));
  w.u64(hello.purpose);
  w.bytes(hello.token);
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
  hello.role = static_cast<Role>(r.u16());
  hello.rank = r.i32();
  std::uint32_t token_length = r.u32();
  hello.purpose = r.u64();
  if (token_length > kMaxTokenBytes) {
    throw Corrupt(ctx, fmt::format("hello frame claims a {}-byte token; at most {} fit", token_length, kMaxTokenBytes));
  }
  hello.token = std::string(r.bytes(kMaxTokenBytes).substr(0, token_length));
  return hello;
}

Verdict judge_hello(const Hello& hello, const std::string& expected_token, std::optional<Role> expected_role) {
  if (hello.version != kProtocolVersion) return Verdict::kRefusedVersion;
  if (!tokens_equal(hello.token, expected_token)) return Verdict::kRefusedToken;
  if (expected_role && hello.role != *expected_role) return Verdict::kRefusedRole;
  return Verdict::kAccepted;
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
      break;
  }
  log::warn("refused connection from {}: wrong job token", remote);
  throw Mismatch(ctx, fmt::format("wrong job token from {}", remote));
}

void send_hello(int fd, const Hello& hello, Deadline deadline, const ErrorContext& ctx) {
  warn_if_no_token(hello.token);
  std::string frame = encode_hello(hello);
  write_all(fd, frame.data(), frame.size(), deadline, ctx);
}

Hello receive_hello(int fd, const std::string& expected_token, Deadline deadline, const ErrorContext& ctx) {
  warn_if_no_token(expected_token);
  const std::string remote = peer_address(fd);
  Hello hello = read_hello(fd, remote, deadline, ctx);
  Verdict verdict = judge_hello(hello, expected_token);
  if (verdict != Verdict::kAccepted) refuse(verdict, hello, remote, ctx);
  return hello;
}

void send_verdict(int fd, Verdict verdict, Deadline deadline, const ErrorContext& ctx) {
  auto byte = static_cast<std::uint8_t>(verdict);
  write_all(fd, &byte, 1, deadline, ctx);
}

void expect_accept(int fd, Deadline deadline, const ErrorContext& ctx) {
  const std::string remote = peer_address(fd);
  std::uint8_t byte = 0;
  try {
    read_all(fd, &byte, 1, deadline, ctx);
  } catch (const PeerLost&) {
    throw PeerLost(ctx, fmt::format("connection to {} closed during the handshake: it is not a braid listener of "
                                    "this job, or it found the hello malformed",
                                    remote));
  }
  switch (static_cast<Verdict>(byte)) {
    case Verdict::kAccepted:
      return;
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
  }
  throw Corrupt(ctx, fmt::format("connection to {} answered the handshake with unknown verdict {}", remote, byte));
}

void client_handshake(int fd, const Hello& hello, Deadline deadline, const ErrorContext& ctx) {
  send_hello(fd, hello, deadline, ctx);
  expect_accept(fd, deadline, ctx);
}

Hello server_handshake(int fd, const std::string& expected_token, Role expected_role, Deadline deadline,
                       const ErrorContext& ctx) {
  warn_if_no_token(expected_token);
  const std::string remote = peer_address(fd);
  Hello hello = read_hello(fd, remote, deadline, ctx);
  Verdict verdict = judge_hello(hello, expected_token, expected_role);
  if (verdict != Verdict::kAccepted) {
    // Best effort: the connector learns why; a connector already gone changes nothing.
    try {
      send_verdict(fd, verdict, deadline, ctx);
    } catch (const Error&) {
    }
    refuse(verdict, hello, remote, ctx);
  }
  send_verdict(fd, Verdict::kAccepted, deadline, ctx);
  return hello;
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
