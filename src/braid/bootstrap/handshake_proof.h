// The cryptography of connection admission: each side of a braid connection proves it knows the
// job token without sending it, by HMAC-SHA256 (OpenSSL's libcrypto) over the hello frame, which
// carries the connector's fresh nonce, and the acceptor's fresh nonce. A sniffer sees two
// nonces and two digests; neither reveals the token, and a replayed proof fails against the
// next connection's acceptor nonce (job_token.h has the flow, docs/bootstrap.md the frames).
//
// The two proofs use distinct labels, so the acceptor's proof (which it gives to anyone who
// sends a well-formed hello) can never serve as a connector's proof.
//
// Thread safety: free functions over their arguments.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace braid::net {

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;  // SHA-256

enum class Prover { kConnector, kAcceptor };

// A fresh nonce from the kernel's random source.
std::string fresh_nonce();

// HMAC-SHA256 keyed by `token` over the prover's label, the hello frame and the acceptor's
// nonce: kProofBytes bytes. An empty token is a valid (empty) key: a job without a token still
// runs the same exchange and admits only peers without one.
std::string handshake_proof(Prover prover, std::string_view token, std::string_view hello_frame,
                            std::string_view acceptor_nonce);

// Whether `received` is the proof `prover` would give, compared in constant time.
bool proof_matches(std::string_view received, Prover prover, std::string_view token, std::string_view hello_frame,
                   std::string_view acceptor_nonce);

}  // namespace braid::net
