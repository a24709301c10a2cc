#include "braid/bootstrap/handshake_proof.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>

#include "braid/base/error.h"
#include "braid/base/random.h"

namespace braid::net {

namespace {

// The version in the label keeps a proof of one protocol version from being accepted by another.
std::string_view label(Prover prover) {
  return prover == Prover::kConnector ? std::string_view("braid-v2 connector proof")
                                      : std::string_view("braid-v2 acceptor proof");
}

}  // namespace

std::string fresh_nonce() { return random_bytes(kNonceBytes); }

std::string handshake_proof(Prover prover, std::string_view token, std::string_view hello_frame,
                            std::string_view acceptor_nonce) {
  std::string message;
  message.reserve(label(prover).size() + 1 + hello_frame.size() + acceptor_nonce.size());
  message.append(label(prover));
  message.push_back('\0');  // the label's end: no label is a prefix of a message under another
  message.append(hello_frame);
  message.append(acceptor_nonce);

  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // A zero-length key is legal for HMAC, but OpenSSL wants a non-null pointer for it.
  static const unsigned char kNoKey = 0;
  const void* key = token.empty() ? static_cast<const void*>(&kNoKey) : static_cast<const void*>(token.data());
  if (HMAC(EVP_sha256(), key, static_cast<int>(token.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), digest.data(), &length) == nullptr ||
      length != kProofBytes) {
    throw SystemError({.op = "handshake"}, "HMAC-SHA256 failed in libcrypto");
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

bool proof_matches(std::string_view received, Prover prover, std::string_view token, std::string_view hello_frame,
                   std::string_view acceptor_nonce) {
  if (received.size() != kProofBytes) return false;
  const std::string expected = handshake_proof(prover, token, hello_frame, acceptor_nonce);
  return CRYPTO_memcmp(received.data(), expected.data(), kProofBytes) == 0;
}

}  // namespace braid::net
