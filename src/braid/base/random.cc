#include "braid/base/random.h"

#include <sys/random.h>

#include <cerrno>

#include "braid/base/error.h"

namespace braid {

std::string random_bytes(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_system_error({.op = "random"}, "getrandom", errno);
    }
    got += static_cast<std::size_t>(n);
  }
  return raw;
}

std::string random_hex(std::size_t bytes) {
  const std::string raw = random_bytes(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (char ch : raw) {
    auto c = static_cast<unsigned char>(ch);
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace braid
