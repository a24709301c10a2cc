// TLS 1.3 on one TCP transport connection (BRAID_TLS=on; off by default). The job token is
// the shared secret: both ends derive the same external pre-shared key from it (HMAC-SHA256 of
// the token under a fixed label), so no certificates are needed, only ranks of this job can
// complete the handshake, and the handshake's ephemeral (EC)DHE exchange (psk_dhe_ke) gives
// forward secrecy: a sniffer that later learns the token still cannot read today's traffic.
// OpenSSL's libssl does the protocol (TLS_AES_128_GCM_SHA256, AES-NI where the CPU has it).
//
// It runs after braid's own token handshake (job_token.h), which stays: a peer is admitted
// before any TLS state is spent on it. Every record is authenticated, so a flipped or injected
// ciphertext byte is a braid::Corrupt naming the peer, never a wrong value.
//
// The I/O calls mirror send()/recv() on a non-blocking socket so the transport's loops stay
// the same: a byte count, 0 for the end of the stream, or -1 with errno = EAGAIN when the
// socket would block. Data TLS has decrypted but the caller has not yet read stays in the
// session (pending()): the transport reads until EAGAIN, and must not sleep in poll() while
// pending() is non-zero.
//
// Thread-safety: none; the transport calls it under the Fabric's lock.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "braid/base/clock.h"
#include "braid/base/error.h"

namespace braid::tcp {

class TlsSession {
 public:
  enum class Side { kConnector, kAcceptor };
  // The most plaintext one TLS record carries (RFC 8446).
  static constexpr std::size_t kRecordBytes = 16384;

  // The TLS handshake on connected socket `fd` (made non-blocking), bounded by `deadline`.
  // InvalidArgument for an empty token; Corrupt when the peer's key differs (another token) or
  // it does not speak TLS; Timeout past the deadline; PeerLost when it hangs up.
  static std::unique_ptr<TlsSession> handshake(int fd, Side side, std::string_view token, Deadline deadline,
                                               const ErrorContext& ctx);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Up to n bytes into one or more records, sent in batches (first sending what an earlier
  // write left buffered: EAGAIN while that cannot all go). A record that fails is Corrupt.
  ssize_t write(const void* data, std::size_t n);
  // Encrypted bytes accepted by write() but not yet taken by the socket: the transport keeps
  // calling flush() (and asking for POLLOUT) while there are any.
  std::size_t buffered() const;
  // Sends what it can of them without blocking: 0, or the socket's errno.
  int flush();
  // Up to n decrypted bytes. A record that fails authentication is Corrupt.
  ssize_t read(void* data, std::size_t n);
  // Decrypted bytes waiting in the session.
  std::size_t pending() const;
  // Writes all of `data`, polling the socket, until the deadline (for shutdown's bye frame).
  void write_all(const void* data, std::size_t n, Deadline deadline);

  // The protocol and cipher that were negotiated ("TLSv1.3 TLS_AES_128_GCM_SHA256").
  std::string describe() const;

 private:
  struct State;
  explicit TlsSession(std::unique_ptr<State> state);
  ssize_t result(int ret, const char* what);

  std::unique_ptr<State> state_;
};

}  // namespace braid::tcp
