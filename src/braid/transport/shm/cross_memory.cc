#include "braid/transport/shm/cross_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace braid::shm {

namespace {

enum class Direction { kRead, kWrite };

// One process_vm_readv / process_vm_writev: the bytes moved, or -1 with errno set.
ssize_t move_once(Direction direction, pid_t pid, std::uint64_t remote, std::byte* local, std::size_t bytes) {
  const iovec here{.iov_base = local, .iov_len = bytes};
  const iovec there{.iov_base = reinterpret_cast<void*>(static_cast<std::uintptr_t>(remote)), .iov_len = bytes};
  ssize_t moved;
  do {
    moved = direction == Direction::kRead ? ::process_vm_readv(pid, &here, 1, &there, 1, 0)
                                          : ::process_vm_writev(pid, &here, 1, &there, 1, 0);
  } while (moved < 0 && errno == EINTR);
  return moved;
}

void move(Direction direction, pid_t pid, std::uint64_t remote, std::byte* local, std::size_t bytes,
          const ErrorContext& context) {
  // The kernel may move less than asked (a range that runs into an unmapped page moves what
  // precedes it; very large ranges are split): continue where it stopped.
  while (bytes > 0) {
    const ssize_t moved = move_once(direction, pid, remote, local, bytes);
    if (moved > 0) {
      remote += static_cast<std::uint64_t>(moved);
      local += moved;
      bytes -= static_cast<std::size_t>(moved);
      continue;
    }
    const int err = moved == 0 ? EFAULT : errno;
    const std::string what =
        fmt::format("{} {} bytes at {:#x} of process {} (rank {}): {}", direction == Direction::kRead ? "reading" : "writing",
                    bytes, remote, pid, context.peer, std::strerror(err));
    if (err == ESRCH) throw PeerLost(context, what + "; the peer's process is gone");
    if (err == EFAULT) throw Corrupt(context, what + "; the peer posted memory it does not have");
    throw SystemError(context, what + " (BRAID_CROSS_MEMORY=0 stages through shared memory instead)");
  }
}

}  // namespace

void read_peer_memory(pid_t pid, std::uint64_t remote, std::byte* local, std::size_t bytes, const ErrorContext& context) {
  move(Direction::kRead, pid, remote, local, bytes, context);
}

void write_peer_memory(pid_t pid, std::uint64_t remote, const std::byte* local, std::size_t bytes,
                       const ErrorContext& context) {
  // process_vm_writev only reads the local iovec; iovec's pointer is not const.
  move(Direction::kWrite, pid, remote, const_cast<std::byte*>(local), bytes, context);
}

bool can_read_peer_memory(pid_t pid, std::uint64_t remote, std::span<const std::byte> expected) {
  std::vector<std::byte> got(expected.size());
  return move_once(Direction::kRead, pid, remote, got.data(), got.size()) == static_cast<ssize_t>(got.size()) &&
         std::memcmp(got.data(), expected.data(), got.size()) == 0;
}

}  // namespace braid::shm
