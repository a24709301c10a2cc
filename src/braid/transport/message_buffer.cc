#include "braid/transport/message_buffer.h"

#include <cstring>

namespace braid {

std::size_t MessageBuffer::iov(std::uint64_t offset, std::uint64_t n, iovec* out, std::size_t max_iov) const {
  std::size_t count = 0;
  if (max_iov == 0) return 0;
  for_each(offset, n, [&](std::byte* at, std::size_t bytes) {
    out[count++] = {at, bytes};
    return count < max_iov;
  });
  return count;
}

void MessageBuffer::write(std::uint64_t offset, const std::byte* src, std::size_t n) const {
  for_each(offset, n, [&](std::byte* at, std::size_t bytes) {
    std::memcpy(at, src, bytes);
    src += bytes;
    return true;
  });
}

void MessageBuffer::read(std::uint64_t offset, std::byte* dst, std::size_t n) const {
  for_each(offset, n, [&](std::byte* at, std::size_t bytes) {
    std::memcpy(dst, at, bytes);
    dst += bytes;
    return true;
  });
}

}  // namespace braid
