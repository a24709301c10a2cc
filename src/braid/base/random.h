// Cryptographically random bytes from the kernel (getrandom), for job tokens, job ids and
// handshake nonces.
#pragma once

#include <string>

namespace braid {

// `bytes` random bytes (handshake nonces).
std::string random_bytes(std::size_t bytes);
// `bytes` random bytes as 2*bytes lowercase hex characters.
std::string random_hex(std::size_t bytes);

}  // namespace braid
