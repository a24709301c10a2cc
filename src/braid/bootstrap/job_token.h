// Connection admission: every braid connection (store client or transport peer) opens with a
// fixed-size hello frame that proves the job token, and the acceptor answers with a one-byte
// verdict before any other byte is read. This keeps a stray process, a port scanner or a rank
// of another job from injecting data into this job's streams (DESIGN.md, "Security").
//
// Hello frame, 88 bytes, little-endian (docs/bootstrap.md has the same table):
//   offset  size  field
//        0     4  magic 0x42524149 ("BRAI" read as a big-endian word)
//        4     2  protocol version (kProtocolVersion)
//        6     2  role (Role)
//        8     4  rank of the sender (int32, -1 when it has none)
//       12     4  token length (0..64)
//       16     8  purpose: free for callers (e.g. which communicator or channel this is)
//       24    64  token bytes, zero padded
//
// Flow: connector sends hello -> acceptor reads exactly 88 bytes (never an allocation sized by
// the wire), checks magic, version and token (constant time), answers a Verdict byte, and on
// refusal logs a warning naming the remote address and closes. A bad magic gets no verdict:
// whatever connected does not speak braid.
//
// Thread safety: free functions; the one-time "no job token" warning is guarded internally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "braid/base/clock.h"
#include "braid/base/error.h"

namespace braid::net {

inline constexpr std::uint32_t kHelloMagic = 0x42524149;  // "BRAI"
inline constexpr std::uint16_t kProtocolVersion = 1;
inline constexpr std::size_t kMaxTokenBytes = 64;
inline constexpr std::size_t kHelloBytes = 24 + kMaxTokenBytes;

enum class Role : std::uint16_t {
  kStoreClient = 1,    // a StoreClient connecting to rank 0's StoreServer
  kTransportPeer = 2,  // a rank connecting to another rank's transport listener
};

struct Hello {
  Role role = Role::kTransportPeer;
  std::int32_t rank = -1;
  std::string token;  // at most kMaxTokenBytes
  std::uint64_t purpose = 0;
  // Filled in by decode_hello; encode_hello writes it as is (tests use it to send an old one).
  std::uint16_t version = kProtocolVersion;
};

// The acceptor's one-byte answer. Values are on the wire: never renumber.
enum class Verdict : std::uint8_t {
  kRefusedToken = 0,    // wrong job token
  kAccepted = 1,
  kRefusedVersion = 2,  // the two sides run different braid protocol versions
  kRefusedRole = 3,     // e.g. a transport peer dialled the store port
};

// A fresh random token for a job (128 bits as 32 hex characters; braid-run uses this).
std::string generate_job_token();

// Equality of two tokens whose running time does not depend on where they first differ, so a
// remote guesser learns nothing from response timing. Tokens longer than kMaxTokenBytes are
// never equal to anything.
bool tokens_equal(std::string_view a, std::string_view b);

// Serialises to exactly kHelloBytes. Throws InvalidArgument for a token over kMaxTokenBytes.
std::string encode_hello(const Hello& hello);
// Parses exactly kHelloBytes. Throws Corrupt on a bad magic, an unknown role or a token length
// over kMaxTokenBytes. The version is returned as received, for judge_hello to check.
Hello decode_hello(std::string_view frame, const ErrorContext& ctx);
// The verdict an acceptor expecting `expected_token` (and, if given, `expected_role`) gives.
// An empty expected token accepts only an empty token.
Verdict judge_hello(const Hello& hello, const std::string& expected_token,
                    std::optional<Role> expected_role = std::nullopt);
// Logs "refused connection from <remote>: <reason>" and throws the matching error: Mismatch
// for a wrong token ("wrong job token from <remote>") or role, Corrupt for a wrong version.
// REQUIRES: verdict != kAccepted.
[[noreturn]] void refuse(Verdict verdict, const Hello& hello, const std::string& remote, const ErrorContext& ctx);

// --- blocking helpers over a connected socket ----------------------------------------------

void send_hello(int fd, const Hello& hello, Deadline deadline, const ErrorContext& ctx);
// Reads and checks one hello; on refusal logs, throws (see refuse) and sends no verdict.
Hello receive_hello(int fd, const std::string& expected_token, Deadline deadline, const ErrorContext& ctx);
void send_verdict(int fd, Verdict verdict, Deadline deadline, const ErrorContext& ctx);
// The connector's side of the verdict: returns on kAccepted, otherwise throws Mismatch
// ("connection to <addr> refused: job token rejected (is BRAID_JOB_TOKEN the same on every
// rank?)"), or PeerLost when the acceptor closed without answering.
void expect_accept(int fd, Deadline deadline, const ErrorContext& ctx);

// Connector: send_hello + expect_accept.
void client_handshake(int fd, const Hello& hello, Deadline deadline, const ErrorContext& ctx);
// Acceptor: receive, judge, answer the verdict (also on refusal, so the connector can say why),
// and return the peer's hello. On refusal throws as refuse(); the caller closes the fd.
// `expected_role` refuses hellos of another role.
Hello server_handshake(int fd, const std::string& expected_token, Role expected_role, Deadline deadline,
                       const ErrorContext& ctx);

// Logs, once per process, that the job runs without a token (anyone who can reach its ports
// can join it). Called by the handshake functions when the token is empty.
void warn_if_no_token(const std::string& token);

}  // namespace braid::net
