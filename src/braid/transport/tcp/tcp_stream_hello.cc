#include "braid/transport/tcp/tcp_stream_hello.h"

#include <fmt/format.h>

#include <cstdint>

#include "braid/bootstrap/socket.h"

namespace braid::tcp {

namespace {

[[noreturn]] void throw_mismatch(const ErrorContext& ctx, int self, int mine, int peer, int theirs) {
  throw Mismatch(ctx, fmt::format("rank {} runs with BRAID_TCP_STREAMS={} but rank {} with BRAID_TCP_STREAMS={} "
                                  "(BRAID_TLS=on counts as 1): every rank must set the same",
                                  self, mine, peer, theirs));
}

}  // namespace

void send_stream_hello(int fd, int index, int count, int self, int peer, Deadline deadline, const ErrorContext& ctx) {
  const std::uint8_t mine[2] = {static_cast<std::uint8_t>(index), static_cast<std::uint8_t>(count)};
  std::uint8_t theirs = 0;
  net::write_all(fd, mine, sizeof mine, deadline, ctx);
  net::read_all(fd, &theirs, 1, deadline, ctx);
  if (theirs != count) throw_mismatch(ctx, self, count, peer, theirs);
}

int receive_stream_hello(int fd, int count, int self, int peer, Deadline deadline, const ErrorContext& ctx) {
  std::uint8_t theirs[2] = {0, 0};
  const auto mine = static_cast<std::uint8_t>(count);
  net::read_all(fd, theirs, sizeof theirs, deadline, ctx);
  net::write_all(fd, &mine, 1, deadline, ctx);
  if (theirs[1] != count) throw_mismatch(ctx, self, count, peer, theirs[1]);
  if (theirs[0] >= count) {
    throw Corrupt(ctx, fmt::format("rank {} announced TCP stream {} of {}", peer, theirs[0], count));
  }
  return theirs[0];
}

}  // namespace braid::tcp
