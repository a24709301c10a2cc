#include "braid/base/crc32c.h"

#include <isa-l/crc.h>

#include <limits>

namespace braid {

std::uint32_t crc32c(const void* data, std::size_t bytes, std::uint32_t seed) {
  // ISA-L takes an int length; feed larger buffers in pieces.
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t crc = seed;
  constexpr std::size_t kPiece = std::numeric_limits<int>::max() / 2;
  while (bytes > 0) {
    std::size_t n = bytes < kPiece ? bytes : kPiece;
    crc = crc32_iscsi(const_cast<unsigned char*>(p), static_cast<int>(n), crc);
    p += n;
    bytes -= n;
  }
  return crc;
}

}  // namespace braid
