// Cryptographically random bytes from the kernel (getrandom), for job tokens and job ids.
#pragma once

#include <string>

namespace braid {

// `bytes` random bytes as 2*bytes lowercase hex characters.
std::string random_hex(std::size_t bytes);

}  // namespace braid
