// libFuzzer target over connection admission (bootstrap/job_token.h, protocol version 2: the job
// token proven by HMAC-SHA256 challenge-response, never sent). The input supplies a hello
// frame, a token, an acceptor nonce and a proof, and the bytes a hostile peer sends; it drives:
//   - decode_hello / judge_hello / judge_proof, the functions the store server's loop calls on
//     a client's first bytes (store_server.cc challenge() and admit());
//   - server_handshake over a socketpair whose other end sent the input: what every transport
//     listener runs on a new connection;
//   - client_handshake over a socketpair whose other end answers with the input: what every
//     connecting rank runs against whatever listens at the address.
//
// Findings (fuzz_support.h):
//   - an exception other than Corrupt from decode_hello, or other than Corrupt / Mismatch /
//     PeerLost from the socket handshakes;
//   - a decoded version-2 hello that does not re-encode to its frame (outside the reserved
//     bytes, which the proof still covers), or a judge_hello verdict that is not the version
//     and role rule;
//   - judge_proof accepting anything but the connector's HMAC, or refusing it: the acceptor's
//     proof, the proof under another token, for another hello byte or another nonce must all
//     be refused;
//   - a socket handshake that succeeds: the input cannot know the fresh nonce of the side under
//     test, so admitting it would admit a peer that never proved the token.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "braid/base/unique_fd.h"
#include "braid/bootstrap/byte_codec.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/socket.h"
#include "fuzz_support.h"

namespace braid::net {
namespace {

using fuzz::require;

constexpr std::size_t kReservedOffset = 12;  // version 1's token length, unread by version 2
constexpr std::size_t kReservedBytes = 4;
constexpr std::size_t kHelloFieldBytes = 24 + kNonceBytes;  // the rest of the frame is padding

void check_hello(std::string_view frame) {
  Hello hello;
  if (!fuzz::succeeds("decode_hello", {ErrorKind::kCorrupt}, [&] { hello = decode_hello(frame, {}); })) return;
  const Verdict any_role = judge_hello(hello);
  if (hello.version != kProtocolVersion) {
    require(any_role == Verdict::kRefusedVersion, "judge_hello took a hello of another version");
    return;
  }
  require(any_role == Verdict::kChallenge, "judge_hello refused a well-formed version-2 hello");
  const Role other = hello.role == Role::kStoreClient ? Role::kTransportPeer : Role::kStoreClient;
  require(judge_hello(hello, hello.role) == Verdict::kChallenge, "judge_hello refused the expected role");
  require(judge_hello(hello, other) == Verdict::kRefusedRole, "judge_hello took another role");
  std::string expected(frame.substr(0, kHelloFieldBytes));
  expected.replace(kReservedOffset, kReservedBytes, kReservedBytes, '\0');
  expected.resize(kHelloBytes, '\0');
  require(encode_hello(hello) == expected, "a version-2 hello that does not re-encode to its frame");
}

void check_proofs(std::string_view token, std::string_view frame, std::string_view nonce, std::string_view proof,
                  std::size_t flip_at) {
  const std::string right = handshake_proof(Prover::kConnector, token, frame, nonce);
  require(right.size() == kProofBytes, "a proof that is not kProofBytes");
  require(judge_proof(right, token, frame, nonce) == Verdict::kAccepted, "judge_proof refused the right proof");
  require((judge_proof(proof, token, frame, nonce) == Verdict::kAccepted) == (proof == right),
          "judge_proof's verdict on the input's proof is not whether it is the connector's HMAC");
  require(judge_proof(handshake_proof(Prover::kAcceptor, token, frame, nonce), token, frame, nonce) ==
              Verdict::kRefusedToken,
          "the acceptor's own proof passed as the connector's");
  require(judge_proof(right, std::string(token) + "x", frame, nonce) == Verdict::kRefusedToken,
          "a proof passed under another token");
  if (!frame.empty()) {
    std::string altered(frame);
    altered[flip_at % altered.size()] ^= 0x01;
    require(judge_proof(right, token, altered, nonce) == Verdict::kRefusedToken, "a proof passed for another hello");
  }
  std::string other_nonce(nonce);
  other_nonce.push_back('\0');
  require(judge_proof(right, token, frame, other_nonce) == Verdict::kRefusedToken,
          "a proof passed for another acceptor nonce (a replay)");
}

// A connected pair whose `peer` end has already sent `bytes` and shut down its writing side.
struct Pair {
  UniqueFd mine, peer;
};
Pair pair_that_sent(std::string_view bytes) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) fuzz::finding("socketpair failed");
  Pair pair{UniqueFd(fds[0]), UniqueFd(fds[1])};
  // Well under the socket buffer: the write completes at once (the input is capped below).
  if (!bytes.empty() && ::write(pair.peer.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    fuzz::finding("short write into a socketpair");
  }
  ::shutdown(pair.peer.get(), SHUT_WR);
  return pair;
}

void check_socket_handshakes(std::string_view peer_bytes, const std::string& token, Role role) {
  const std::initializer_list<ErrorKind> refusals = {ErrorKind::kCorrupt, ErrorKind::kMismatch, ErrorKind::kPeerLost};
  const Deadline deadline = Deadline::after(Seconds{5.0});
  {
    Pair pair = pair_that_sent(peer_bytes);
    if (fuzz::succeeds("server_handshake", refusals,
                       [&] { (void)server_handshake(pair.mine.get(), token, role, deadline, {}); })) {
      fuzz::finding("server_handshake admitted a peer that cannot know its nonce");
    }
  }
  {
    Pair pair = pair_that_sent(peer_bytes);
    Hello hello{.role = role, .rank = 1, .token = token};
    if (fuzz::succeeds("client_handshake", refusals, [&] { client_handshake(pair.mine.get(), hello, deadline, {}); })) {
      fuzz::finding("client_handshake trusted an acceptor that cannot know its nonce");
    }
  }
}

}  // namespace
}  // namespace braid::net

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "handshake_fuzz";
  braid::fuzz::quiet_logs();
  return 0;
}

// Input: hello frame (88 bytes) | token length (1 byte, mod 65) | token | acceptor nonce (32) |
// proof (32) | flip position (1) | the rest: more bytes the hostile peer sends after the hello.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid::net;
  if (size > 4096) return 0;  // the socket writes must fit the buffer in one go
  braid::fuzz::Cursor in(data, size);
  const std::string frame(in.bytes(kHelloBytes));
  const std::string token(in.bytes(in.u8() % (kMaxTokenBytes + 1)));
  const std::string nonce(in.bytes(kNonceBytes));
  const std::string proof(in.bytes(kProofBytes));
  const std::size_t flip_at = in.u8();
  const std::string after(in.rest());

  check_hello(frame);
  check_proofs(token, frame, nonce, proof, flip_at);
  // The hostile peer sends the hello then whatever follows it (a proof, garbage, nothing).
  const Role role = (flip_at & 1) ? Role::kStoreClient : Role::kTransportPeer;
  check_socket_handshakes(frame + proof + after, token, role);
  return 0;
}
