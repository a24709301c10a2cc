// Where a message's bytes live on this rank: one contiguous range, or pieces in message order
// (a gather send, a scatter receive: Communicator::isendv / irecvv). The wire never knows the
// difference: a message sent from pieces may be received into one range and the other way
// round, so each side picks its own memory layout. A transport moves a buffer's bytes by
// ranges of the message ([offset, offset + n)), and each range maps to the pieces it covers:
// writev/readv on a socket, one ring copy per piece on shared memory, never a staging copy.
//
//   const BufferPiece pieces[] = {{k_block, 4096}, {v_block, 4096}};
//   MessageBuffer buffer(pieces);
//   buffer.for_each(0, 8192, [&](std::byte* at, std::size_t n) { ring.put(at, n); return true; });
//
// Finding an offset walks the pieces from the first: a range costs O(pieces), which keeps a
// buffer a pair of words (transports ask once per syscall, and a message of thousands of tiny
// pieces is better packed by its owner).
//
// Thread-safety: a view; the memory is the caller's.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace braid {

struct BufferPiece {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
};

class MessageBuffer {
 public:
  MessageBuffer() = default;
  explicit MessageBuffer(std::byte* data) : data_(data) {}
  explicit MessageBuffer(std::span<const BufferPiece> pieces) : pieces_(pieces) {}

  bool contiguous() const { return pieces_.empty(); }

  // Calls f(at, bytes) for each run of memory holding message bytes [offset, offset + n), in
  // order, while f returns true. REQUIRES: the range lies inside the buffer.
  template <typename F>
  void for_each(std::uint64_t offset, std::uint64_t n, F&& f) const {
    if (n == 0) return;
    if (contiguous()) {
      f(data_ + offset, static_cast<std::size_t>(n));
      return;
    }
    for (const BufferPiece& piece : pieces_) {
      if (offset >= piece.bytes) {
        offset -= piece.bytes;
        continue;
      }
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(piece.bytes - offset, n));
      if (!f(piece.data + offset, take)) return;
      n -= take;
      offset = 0;
      if (n == 0) return;
    }
  }

  // The iovecs of bytes [offset, offset + n), at most max_iov of them (the range is cut short
  // when it spans more pieces). Returns how many were filled.
  std::size_t iov(std::uint64_t offset, std::uint64_t n, iovec* out, std::size_t max_iov) const;
  // Copies src into message bytes [offset, offset + n) / those bytes out into dst.
  void write(std::uint64_t offset, const std::byte* src, std::size_t n) const;
  void read(std::uint64_t offset, std::byte* dst, std::size_t n) const;

 private:
  std::byte* data_ = nullptr;
  std::span<const BufferPiece> pieces_;
};

}  // namespace braid
