// Connection admission: every braid connection (store client or transport peer) opens with a
// challenge-response that proves, both ways, that each side knows the job token, and the
// token itself never crosses the wire. This keeps a stray process, a port scanner, a rank of
// another job or someone who sniffed an earlier handshake from injecting data into this job's
// streams, and a rank from talking to a listener that is not of its job (DESIGN.md, "Security").
//
// Flow (docs/bootstrap.md has the frames):
//   connector -> hello (88 bytes: magic, version, role, rank, purpose, connector nonce)
//   acceptor  -> one byte: a refusal Verdict (other version, wrong role), or kChallenge followed
//                by its nonce and its proof HMAC(token, acceptor label | hello | acceptor nonce)
//   connector -> its proof HMAC(token, connector label | hello | acceptor nonce)
//   acceptor  -> Verdict: kAccepted, or kRefusedToken
// The acceptor reads fixed sizes only (never an allocation sized by the wire). A bad magic gets
// no answer: whatever connected does not speak braid. A refused side logs a warning naming the
// remote address and closes. handshake_proof.h holds the HMAC.
//
// The hello is 88 bytes in every protocol version, so each version reads another's hello and
// refuses it by its version field.
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
#include "braid/bootstrap/handshake_proof.h"

namespace braid::net {

inline constexpr std::uint32_t kHelloMagic = 0x42524149;  // "BRAI"
inline constexpr std::uint16_t kProtocolVersion = 2;       // 1 sent the token itself
inline constexpr std::size_t kMaxTokenBytes = 64;
inline constexpr std::size_t kHelloBytes = 88;
// The acceptor's challenge: the kChallenge byte, its nonce, its proof.
inline constexpr std::size_t kChallengeBytes = 1 + kNonceBytes + kProofBytes;

enum class Role : std::uint16_t {
  kStoreClient = 1,    // a StoreClient connecting to rank 0's StoreServer
  kTransportPeer = 2,  // a rank connecting to another rank's transport listener
};

struct Hello {
  Role role = Role::kTransportPeer;
  std::int32_t rank = -1;
  // The key the connector proves with; never on the wire (decode_hello leaves it empty).
  std::string token;
  std::uint64_t purpose = 0;
  // Filled in by decode_hello; encode_hello writes it as is (tests use it to send an old one).
  std::uint16_t version = kProtocolVersion;
  // The connector's nonce: kNonceBytes (client_handshake draws a fresh one).
  std::string nonce = std::string(kNonceBytes, '\0');
};

// The acceptor's one-byte answers. Values are on the wire: never renumber.
enum class Verdict : std::uint8_t {
  kRefusedToken = 0,    // the connector's proof is not the job token's
  kAccepted = 1,
  kRefusedVersion = 2,  // the two sides run different braid protocol versions
  kRefusedRole = 3,     // e.g. a transport peer dialled the store port
  kChallenge = 4,       // not a verdict: the acceptor's nonce and proof follow
};

// A fresh random token for a job (128 bits as 32 hex characters; braid-run uses this).
std::string generate_job_token();

// Serialises to exactly kHelloBytes. Throws InvalidArgument for a token over kMaxTokenBytes or
// a nonce that is not kNonceBytes.
std::string encode_hello(const Hello& hello);
// Parses exactly kHelloBytes. Throws Corrupt on a bad magic or an unknown role. The version is
// returned as received, for judge_hello to check.
Hello decode_hello(std::string_view frame, const ErrorContext& ctx);
// What an acceptor answers a decoded hello before any proof: kChallenge, or the refusal for
// another protocol version or (if given) another role than `expected_role`.
Verdict judge_hello(const Hello& hello, std::optional<Role> expected_role = std::nullopt);
// The acceptor's challenge frame (kChallengeBytes) for `hello_frame` under `token`.
std::string encode_challenge(std::string_view token, std::string_view hello_frame, std::string_view acceptor_nonce);
// The acceptor's verdict on the connector's proof.
Verdict judge_proof(std::string_view proof, std::string_view token, std::string_view hello_frame,
                    std::string_view acceptor_nonce);
// Logs "refused connection from <remote>: <reason>" and throws the matching error: Mismatch
// for a wrong token ("wrong job token from <remote>") or role, Corrupt for a wrong version.
// REQUIRES: verdict is a refusal.
[[noreturn]] void refuse(Verdict verdict, const Hello& hello, const std::string& remote, const ErrorContext& ctx);

// --- blocking handshakes over a connected socket --------------------------------------------

// Connector: the whole exchange with hello.token as the key. Throws Mismatch when refused
// ("connection to <addr> refused: job token rejected (is BRAID_JOB_TOKEN the same on every
// rank?)", another version, another role) or when the acceptor cannot prove the token itself
// (not a listener of this job), PeerLost when it closes without answering, Corrupt on an
// answer that is not braid's.
void client_handshake(int fd, const Hello& hello, Deadline deadline, const ErrorContext& ctx);
// Acceptor: the whole exchange; answers every refusal (so the connector can say why), throws
// as refuse() on one, and returns the peer's hello on acceptance. `expected_role` refuses
// hellos of another role. The caller closes the fd on a throw.
Hello server_handshake(int fd, const std::string& expected_token, Role expected_role, Deadline deadline,
                       const ErrorContext& ctx);

// Throws InvalidArgument when `bind_addr` ("" = loopback) is not a loopback address and `token`
// is empty: a listener reachable from other hosts must admit only this job's processes, so it
// refuses to start rather than let anyone who can reach the port join (docs/multinode.md).
// `listener` names it in the message ("the rendezvous store", "the TCP transport").
void require_token_beyond_loopback(const std::string& bind_addr, const std::string& token, std::string_view listener,
                                   const ErrorContext& ctx);

// Logs, once per process, that the job runs without a token (anyone who can reach its ports
// can join it). Called by the handshake functions when the token is empty.
void warn_if_no_token(const std::string& token);

}  // namespace braid::net
